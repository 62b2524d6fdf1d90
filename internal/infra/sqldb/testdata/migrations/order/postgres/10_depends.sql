-- Runs after 2_base.sql although it sorts first as text.
CREATE TABLE depends (id INTEGER PRIMARY KEY, base_id INTEGER NOT NULL REFERENCES base (id));
