-- Usage buckets: the part of the cost that a vendor reports per day and
-- project (the bucket's metrics.dailyCost, which the OpenAI and Anthropic
-- sources' cost buckets carry), so that the merged view can say which part
-- of a summed cost is not per person or hour. Never negative nor above the
-- bucket's cost.
ALTER TABLE consumer_records ADD COLUMN daily_cost DOUBLE PRECISION NOT NULL DEFAULT 0;
UPDATE consumer_records SET daily_cost = LEAST(GREATEST(cost, 0), GREATEST(0, CASE
	WHEN json_typeof(body::json #> '{metrics,dailyCost}') = 'number' THEN (body::json #>> '{metrics,dailyCost}')::double precision
	ELSE 0 END))
WHERE resource = 'usage' AND has_cost AND strpos(body, '\u0000') = 0;
