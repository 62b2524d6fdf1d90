-- Usage buckets: the part of the cost that is a tool's estimate (the
-- bucket's metrics.estimatedCost; for a telemetry bucket written before it
-- carried that member, its whole cost when metrics.costSource says
-- "estimate"), so that the merged view can say which part of a summed cost
-- is estimated. Never negative nor above the bucket's cost.
ALTER TABLE consumer_records ADD COLUMN estimated_cost REAL NOT NULL DEFAULT 0;
UPDATE consumer_records SET estimated_cost = min(max(cost, 0), max(0, CASE
	WHEN json_type(body, '$.metrics.estimatedCost') IN ('integer', 'real') THEN json_extract(body, '$.metrics.estimatedCost')
	WHEN json_extract(body, '$.metrics.costSource') = 'estimate' THEN cost
	ELSE 0 END))
WHERE resource = 'usage' AND has_cost = 1 AND instr(body, '\u0000') = 0;
