-- Usage buckets: the part of the cost that is a tool's estimate (the
-- bucket's metrics.estimatedCost; for a telemetry bucket written before it
-- carried that member, its whole cost when metrics.costSource says
-- "estimate"), so that the merged view can say which part of a summed cost
-- is estimated. Never negative nor above the bucket's cost.
ALTER TABLE consumer_records ADD COLUMN estimated_cost DOUBLE PRECISION NOT NULL DEFAULT 0;
UPDATE consumer_records SET estimated_cost = LEAST(GREATEST(cost, 0), GREATEST(0, CASE
	WHEN json_typeof(body::json #> '{metrics,estimatedCost}') = 'number' THEN (body::json #>> '{metrics,estimatedCost}')::double precision
	WHEN body::json #>> '{metrics,costSource}' = 'estimate' THEN cost
	ELSE 0 END))
WHERE resource = 'usage' AND has_cost AND strpos(body, '\u0000') = 0;
