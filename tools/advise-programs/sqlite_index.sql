-- SQLite index build for docs/advise.md: sqlite3 :memory: < sqlite_index.sql is not
-- usable (advise gives no stdin), so run `sqlite3 :memory: ".read sqlite_index.sql"`.
PRAGMA cache_size = -262144;
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 400000)
INSERT INTO t SELECT (x * 2654435761) % 1000003, hex(randomblob(8)) FROM c;
CREATE INDEX ta ON t(a);
CREATE INDEX tb ON t(b);
SELECT count(*) FROM t WHERE a < 500000;
