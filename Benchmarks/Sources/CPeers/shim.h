// The C peers strata-bench compares Strata with (Debian: liblmdb-dev, libleveldb-dev),
// liblz4 for the machine-limit measurements, and malloc.h for --trace-memory. SQLite comes through GRDB's GRDBSQLite.
#include <lmdb.h>
#include <leveldb/c.h>
#include <lz4.h>
#include <malloc.h>
