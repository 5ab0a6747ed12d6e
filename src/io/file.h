/* file.h - reading a whole file or stream into memory, with a size cap. */
#ifndef AGENTC_IO_FILE_H
#define AGENTC_IO_FILE_H

#include <stddef.h>
#include <stdio.h>

/* Reads f to its end into a new NUL-terminated buffer (free it) and stores
 * the length in *len_out (may be NULL). Returns NULL with errno set: EFBIG
 * when the data exceeds cap bytes (nothing is cut silently), ENOMEM, EIO. */
char *ac_read_stream(FILE *f, size_t cap, size_t *len_out);
/* The same for a file by path; errno from fopen when it cannot be opened. */
char *ac_read_file(const char *path, size_t cap, size_t *len_out);

#endif
