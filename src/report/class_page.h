/* The pages of a class (classes/<n>.html, <n>-2.html, ... in the report's
 * directory): every divergence of the class, grouped by the candidate's
 * reason, PAGE_ROWS a page. Streamed from the run database: the memory they
 * take does not grow with the class. */
#ifndef UST_REPORT_CLASS_PAGE_H
#define UST_REPORT_CLASS_PAGE_H

#include "report/model.h"

#include <stdint.h>
#include <stdio.h>

/* Rows a page holds when the options say 0. */
#define UST__REPORT_PAGE_ROWS 2000
/* Rows of each reason shown with their full detail (request, story), and
 * at most so many on a page (a candidate with a reason per event): the
 * others name `understudy show`. */
#define UST__REPORT_GROUP_DETAILS 10
#define UST__REPORT_PAGE_DETAILS 100
/* By default (ust_report_opts.value_rows_max), a class of at most this many
 * divergences shows both values of every differing field in each row; a
 * larger one names the fields (each row's values are in its detail,
 * divergences.jsonl and `understudy show`): the values were four fifths of
 * a million-row class's pages and of their time. */
#define UST__REPORT_VALUE_ROWS_MAX 20000

/* Writes the pages of every class the model details into o->out_dir's
 * classes/ (files of an earlier report's pages there removed first).
 * *done counts the rows written; progress tells them as a fraction of
 * total, with a count of 0 (the count is the JSONL's lines). */
int ust__report_write_class_pages(const ust_report_opts *o, const ust__report_model *m,
                                  int64_t *done, int64_t total, char **err);

/* The file name of page (1 the first) of the class at index cls, relative to
 * the classes/ directory: never anything of the class's name. */
void ust__report_put_page_name(FILE *f, size_t cls, int64_t page);

/* A candidate's reason, quoted and escaped (NULL: "no reason given"). */
void ust__report_put_reason(FILE *f, const char *reason);
/* Whether two reasons (either NULL) are the same. */
int ust__report_same_reason(const char *a, const char *b);

/* n with a comma between each group of three digits: 4,854. */
void ust__report_put_count(FILE *f, int64_t n);

#endif
