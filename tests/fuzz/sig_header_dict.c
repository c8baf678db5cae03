/* Writes fuzz_sig_header's libFuzzer dictionary to the file argv[1]: the
 * words of its input format and of every scheme's row in tests/support/sig_vectors.h
 * (its header's words and its vector's timestamp), each once. Built and run
 * by the fuzz tree (tests/fuzz/CMakeLists.txt), so a scheme added to the
 * vectors is in the dictionary without a hand-kept copy. */
#include <understudy/array.h>

#include "sig_vectors.h"

#include <stdio.h>
#include <string.h>

#define N_VECTORS UST_ARRAY_SIZE(sig_vectors)
#define MAX_WORDS (N_VECTORS * 6 + 1)

static const char *seen[MAX_WORDS];
static size_t n_seen;

/* A word in libFuzzer's quoting (\\, \" and \xNN), unless already written. */
static void word(FILE *f, const char *w)
{
    for (size_t i = 0; i < n_seen; i++)
        if (strcmp(seen[i], w) == 0)
            return;
    seen[n_seen++] = w;
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)w; *c != '\0'; c++)
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            fprintf(f, "\\x%02X", *c);
        else
            fputc(*c, f);
    fputs("\"\n", f);
}

int main(int argc, char **argv)
{
    FILE *f = argc == 2 ? fopen(argv[1], "w") : NULL;
    if (f == NULL) {
        fprintf(stderr, "usage: sig_header_dict OUT.dict (a file it can write)\n");
        return 2;
    }
    fputs("# libFuzzer dictionary for fuzz_sig_header, made by sig_header_dict from\n"
          "# tests/support/sig_vectors.h: the words of its format.\n",
          f);
    static char stamps[N_VECTORS][24];
    for (size_t i = 0; i < N_VECTORS; i++) {
        for (size_t k = 0; k < UST_ARRAY_SIZE(sig_vectors[i].words); k++)
            if (sig_vectors[i].words[k] != NULL)
                word(f, sig_vectors[i].words[k]);
    }
    for (size_t i = 0; i < N_VECTORS; i++) {
        snprintf(stamps[i], sizeof(stamps[i]), "%lld",
                 (long long)sig_vectors[i].received_at_s);
        word(f, stamps[i]);
    }
    word(f, "\n"); /* the input's line separator */
    return fclose(f) == 0 ? 0 : 1;
}
