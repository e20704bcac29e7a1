/*  fuzz_corpus.c - runs a fuzz target on every committed seed without
    libFuzzer, so make check replays them under the test build's sanitizers
    even where clang is missing. Linked with one target; its seeds are read
    from $KENNEL_SRCDIR/tests/fuzz/FUZZ_CORPUS (set per program in the
    makefile: corpus for the wire target, corpus-NAME for the gateway's) or
    from the directory given as argv[1]; argv[1] may also be one file.
*/
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_CORPUS
#define FUZZ_CORPUS "corpus"
#endif

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Reads a whole file; NULL on error. */
static uint8_t *
s_read (const char *path, size_t *size)
{
    FILE *f = fopen (path, "rb");
    if (!f)
        return NULL;
    uint8_t *data = NULL;
    long len = fseek (f, 0, SEEK_END) == 0 ? ftell (f) : -1;
    if (len >= 0 && fseek (f, 0, SEEK_SET) == 0 && (data = malloc ((size_t) len + 1))
        && fread (data, 1, (size_t) len, f) != (size_t) len) {
        free (data);
        data = NULL;
    }
    fclose (f);
    *size = (size_t) len;
    return data;
}

/* Runs the target on one file: 1 when it is run, 0 when unreadable. */
static int
s_run (const char *path, const char *name)
{
    size_t size;
    uint8_t *data = s_read (path, &size);
    if (!data) {
        fprintf (stderr, "cannot read %s\n", path);
        return 0;
    }
    fprintf (stderr, "seed %s\n", name); /* named before a trap can end the run */
    LLVMFuzzerTestOneInput (data, size);
    free (data);
    return 1;
}

int
main (int argc, char *argv[])
{
    char dir[4096];
    const char *src = getenv ("KENNEL_SRCDIR");
    if (argc > 1)
        snprintf (dir, sizeof dir, "%s", argv[1]);
    else
        snprintf (dir, sizeof dir, "%s/tests/fuzz/" FUZZ_CORPUS, src ? src : ".");
    DIR *d = opendir (dir);
    if (!d && errno == ENOTDIR) /* one input, a finding for instance */
        return s_run (dir, dir) ? 0 : 1;
    if (!d) {
        perror (dir);
        return 1;
    }
    int runs = 0, failed = 0;
    struct dirent *entry;
    while ((entry = readdir (d))) {
        if (entry->d_name[0] == '.')
            continue;
        char path[8192];
        snprintf (path, sizeof path, "%s/%s", dir, entry->d_name);
        if (s_run (path, entry->d_name))
            runs++;
        else
            failed++;
    }
    closedir (d);
    printf ("%s: %d seed(s) replayed, %d unreadable\n", dir, runs, failed);
    return failed || runs == 0 ? 1 : 0;
}
