-- Usage buckets: the part of the cost that a vendor reports per day and
-- project (the bucket's metrics.dailyCost, which the OpenAI and Anthropic
-- sources' cost buckets carry), so that the merged view can say which part
-- of a summed cost is not per person or hour. Never negative nor above the
-- bucket's cost.
ALTER TABLE consumer_records ADD COLUMN daily_cost REAL NOT NULL DEFAULT 0;
UPDATE consumer_records SET daily_cost = min(max(cost, 0), max(0, CASE
	WHEN json_type(body, '$.metrics.dailyCost') IN ('integer', 'real') THEN json_extract(body, '$.metrics.dailyCost')
	ELSE 0 END))
WHERE resource = 'usage' AND has_cost = 1 AND instr(body, '\u0000') = 0;
