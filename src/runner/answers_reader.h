/* The runner's side of the live answers database (answers.h): the
 * legacy's decisions read back as they were answered. */
#ifndef UST_ANSWERS_READER_H
#define UST_ANSWERS_READER_H

#include <sqlite3.h>
#include <stdint.h>

#include <understudy/host.h>

typedef struct ust__answers_reader {
    sqlite3 *db;
    sqlite3_stmt *get;
} ust__answers_reader;

/* Opens path read-only. 0 or UST_EDB with *err; a is left to close. */
int ust__answers_reader_open(ust__answers_reader *a, const char *path, char **err);
void ust__answers_reader_close(ust__answers_reader *a);
/* The legacy's decision of seq into *d. 0, UST_EDB when there is none. */
int ust__answers_reader_get(ust__answers_reader *a, int64_t seq, ust_decision *d,
                            char **err);

#endif
