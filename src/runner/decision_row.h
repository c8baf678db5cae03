/* A decision as columns of a row, one per field of UST_DECISION_FIELDS
 * (host.h) but the entity: verdict, status, state_before, state, flags
 * (JSON, NULL when none), body, headers (JSON, NULL when none), reason,
 * error. The run database (l_ and c_ before each name) and the live answers
 * database use this layout. */
#ifndef UST_DECISION_ROW_H
#define UST_DECISION_ROW_H

#include <sqlite3.h>

#include <understudy/host.h>

/* A field's column (the entity has none): its name with prefix p, then
 * type; after first for the verdict, which opens a list (the first field,
 * and every decision has one), after ", " for the others. */
#define UST__DECISION_COLUMN_VERDICT(first, p, c, type)                                \
    first UST__DECISION_STR(p##c) type
#define UST__DECISION_COLUMN_ENTITY(first, p, c, type)
#define UST__DECISION_COLUMN_ANY(first, p, c, type) ", " UST__DECISION_STR(p##c) type
#define UST__DECISION_COLUMN_STATUS UST__DECISION_COLUMN_ANY
#define UST__DECISION_COLUMN_TEXT UST__DECISION_COLUMN_ANY
#define UST__DECISION_COLUMN_FLAGS UST__DECISION_COLUMN_ANY
#define UST__DECISION_COLUMN_BODY UST__DECISION_COLUMN_ANY
#define UST__DECISION_COLUMN_HEADERS UST__DECISION_COLUMN_ANY
#define UST__DECISION_COLUMN_REASON UST__DECISION_COLUMN_ANY
#define UST__DECISION_COLUMN_ERROR UST__DECISION_COLUMN_ANY
#define UST__DECISION_SQL_VERDICT " TEXT"
#define UST__DECISION_SQL_STATUS " INTEGER"
#define UST__DECISION_SQL_ENTITY
#define UST__DECISION_SQL_TEXT " TEXT"
#define UST__DECISION_SQL_FLAGS " TEXT"
#define UST__DECISION_SQL_BODY " TEXT"
#define UST__DECISION_SQL_HEADERS " TEXT"
#define UST__DECISION_SQL_REASON " TEXT"
#define UST__DECISION_SQL_ERROR " TEXT"
#define UST__DECISION_STR_(x) #x
#define UST__DECISION_STR(x) UST__DECISION_STR_(x)
#define UST__DECISION_NAME_(p, kind, m, column, wire, abi, divergence, div_at)         \
    UST__DECISION_COLUMN_##kind(, p, column, )
#define UST__DECISION_DEF_(p, kind, m, column, wire, abi, divergence, div_at)          \
    UST__DECISION_COLUMN_##kind(", ", p, column, UST__DECISION_SQL_##kind)
/* What every decision has: NOT NULL in a table whose rows each hold one. */
#define UST__DECISION_NOT_NULL_VERDICT " NOT NULL"
#define UST__DECISION_NOT_NULL_STATUS " NOT NULL"
#define UST__DECISION_NOT_NULL_ENTITY
#define UST__DECISION_NOT_NULL_TEXT
#define UST__DECISION_NOT_NULL_FLAGS
#define UST__DECISION_NOT_NULL_BODY
#define UST__DECISION_NOT_NULL_HEADERS
#define UST__DECISION_NOT_NULL_REASON
#define UST__DECISION_NOT_NULL_ERROR
#define UST__DECISION_DEF_NOT_NULL_(p, kind, m, column, wire, abi, divergence, div_at) \
    UST__DECISION_COLUMN_##kind(                                                       \
        ", ", p, column, UST__DECISION_SQL_##kind UST__DECISION_NOT_NULL_##kind)

/* The columns' names in ust__decision_bind order, "verdict, status, ...",
 * with p before each (UST__DECISION_COLUMN_NAMES_AS(l_): "l_verdict, ..."). */
#define UST__DECISION_COLUMN_NAMES_AS(p)                                               \
    UST_DECISION_FIELDS_WITH(UST__DECISION_NAME_, p)
#define UST__DECISION_COLUMN_NAMES UST__DECISION_COLUMN_NAMES_AS()
/* Their definitions for a CREATE TABLE, after a column of its own:
 * ", l_verdict TEXT, l_status INTEGER, ..." for p l_. */
#define UST__DECISION_COLUMN_DEFS(p) UST_DECISION_FIELDS_WITH(UST__DECISION_DEF_, p)
/* The same, with NOT NULL where every decision has a value (verdict,
 * status): for a table of decisions only, the answers. */
#define UST__DECISION_COLUMN_DEFS_NOT_NULL(p)                                          \
    UST_DECISION_FIELDS_WITH(UST__DECISION_DEF_NOT_NULL_, p)

/* x when the field has a column (every kind but the entity), else nothing. */
#define UST__DECISION_HAS_COLUMN_ENTITY(x)
#define UST__DECISION_HAS_COLUMN_VERDICT(x) x
#define UST__DECISION_HAS_COLUMN_STATUS(x) x
#define UST__DECISION_HAS_COLUMN_TEXT(x) x
#define UST__DECISION_HAS_COLUMN_FLAGS(x) x
#define UST__DECISION_HAS_COLUMN_BODY(x) x
#define UST__DECISION_HAS_COLUMN_HEADERS(x) x
#define UST__DECISION_HAS_COLUMN_REASON(x) x
#define UST__DECISION_HAS_COLUMN_ERROR(x) x
#define UST__DECISION_COUNT_(kind, m, column, wire, abi, divergence, div_at)           \
    UST__DECISION_HAS_COLUMN_##kind(+1)
#define UST__DECISION_MARK_(kind, m, column, wire, abi, divergence, div_at)            \
    UST__DECISION_HAS_COLUMN_##kind(",?")
/* How many columns a decision takes. */
#define UST__DECISION_COLUMNS (0 UST_DECISION_FIELDS(UST__DECISION_COUNT_))
/* A placeholder for each, after one of the statement's own: ",?,?,...". */
#define UST__DECISION_MARKS UST_DECISION_FIELDS(UST__DECISION_MARK_)

/* Binds d (NULL: all NULL) to the columns starting at col. */
void ust__decision_bind(sqlite3_stmt *st, int col, const ust_decision *d);
/* Reads the columns starting at col into *d (cleared first); entity from
 * its own column, or NULL. 0 or UST_ENOMEM / UST_EPARSE. */
int ust__decision_read(sqlite3_stmt *st, int col, const char *entity, ust_decision *d);

#endif
