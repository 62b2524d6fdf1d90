CREATE TABLE half_done (id INTEGER PRIMARY KEY);
INSERT INTO widgets (id, name) VALUES ('w1', 'from broken');
INSERT INTO no_such_table (id) VALUES (1);
