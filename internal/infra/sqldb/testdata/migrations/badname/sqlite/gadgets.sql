CREATE TABLE gadgets (
	id        TEXT PRIMARY KEY,
	widget_id TEXT NOT NULL REFERENCES widgets (id)
);
CREATE INDEX gadgets_widget_id ON gadgets (widget_id);
