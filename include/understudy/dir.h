/* Folders an output is written into: made when missing, as `mkdir -p` does,
 * so `report --out a/b` and `gen --out a/b.jsonl` work on a fresh machine. */
#ifndef UNDERSTUDY_DIR_H
#define UNDERSTUDY_DIR_H

/* Makes the folder dir and each missing folder above it (mode 0755, less
 * the umask). 0 when it is a folder at the end; UST_EIO with *err naming
 * dir and the part that could not be made, or the part that exists and is
 * not a folder. */
int ust_mkdir_p(const char *dir, char **err);

/* ust_mkdir_p of the folder that holds the file path (none for a file named
 * without a '/'). */
int ust_mkdir_parent(const char *path, char **err);

#endif
