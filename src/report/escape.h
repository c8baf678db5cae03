/* Writing outside text into a report: what each format must replace, and
 * bidi controls made visible and inert. */
#ifndef UST_REPORT_ESCAPE_H
#define UST_REPORT_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Writes s with each character that replace (256 entries, by byte) maps to a
 * string written as that string instead (NULL, or no replace: the character
 * as it is), and each bidi control as bidi_format with its code point (one
 * unsigned argument). */
void ust__report_put_escaped(FILE *f, const char *s, const char *const *replace,
                             const char *bidi_format);
/* The same for the n bytes at s (no NUL needed): a piece of a longer text,
 * cut anywhere but inside a UTF-8 sequence. */
void ust__report_put_escapedn(FILE *f, const char *s, size_t n,
                              const char *const *replace, const char *bidi_format);

/* How HTML and Markdown show a bidi control: visible, and inert. */
#define UST__REPORT_BIDI_VISIBLE "{U+%04X}"

#endif
