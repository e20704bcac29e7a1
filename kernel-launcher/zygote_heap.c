/*  zygote_heap.c - the zygote fills its allocators' free holes before it
    serves, so that each child's allocations land in fresh memory.

    A child allocates and frees as it confines and starts: served from free
    chunks scattered over the heap it shares with its siblings, every such
    allocation copies a page of that heap (copy-on-write). Importing large
    packages (IPython: ~40 MB of heap) leaves many holes; a kernel then
    copied ~3 MB more per conversation. Taking every hole once, here, sends
    the children's allocations to the top of the heap and to new pymalloc
    pools: contiguous pages of their own. The blocks are kept for the
    zygote's life (they were resident already, so this costs it no memory). */
#include <Python.h>

#include "zygote.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEAP_KEPT_MAX 262144           /* blocks held at most (2 MB of pointers) */
#define HEAP_BYTES_MAX (64 << 20)     /* and bytes: a heap that never runs out stops here */
#define HEAP_CHUNK_MAX 65536          /* larger holes are few */

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_FILL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_FILL 0
#endif
#endif
#ifndef HEAP_FILL
#define HEAP_FILL 1
#endif

/* Exported by libpython; declared only in its internal headers
   (internal/pycore_pymem.h), which need Py_BUILD_CORE. */
PyAPI_FUNC (int) _PyObject_DebugMallocStats (FILE *out);

static void **s_kept;
static size_t s_kept_count;
static size_t s_kept_bytes;

static int
s_keep (void *block, size_t size)
{
    if (s_kept_count == HEAP_KEPT_MAX || s_kept_bytes + size > HEAP_BYTES_MAX)
        return -1;
    s_kept[s_kept_count++] = block;
    s_kept_bytes += size;
    return 0;
}

/* glibc: malloc each size until a block comes from the top chunk (past the
   old top), from the largest size down, so large holes go first and their
   remainders to smaller sizes. */
static void
s_fill_malloc (void)
{
    struct mallinfo2 info = mallinfo2 ();
    uintptr_t top = (uintptr_t) sbrk (0) - info.keepcost;
    for (size_t size = HEAP_CHUNK_MAX; size >= 16; size -= size > 1024 ? size / 8 : 16) {
        for (;;) {
            void *block = malloc (size);
            if (!block)
                return;
            if ((uintptr_t) block >= top || s_keep (block, size) < 0) {
                free (block);
                break;
            }
        }
    }
}

/* pymalloc: the free blocks of its partly used pools, per size class, as
   _PyObject_DebugMallocStats reports them ("class size num-pools
   blocks-in-use avail-blocks"). */
static void
s_fill_pymalloc (void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    if (!out)
        return;
    _PyObject_DebugMallocStats (out);
    fclose (out);
    char *line = text;
    while (line && *line) {
        char *next = strchr (line, '\n');
        if (next)
            *next++ = '\0';
        unsigned cls, size, pools, used, avail;
        if (sscanf (line, " %u %u %u %u %u", &cls, &size, &pools, &used, &avail) == 5)
            for (unsigned i = 0; i < avail; i++) {
                void *block = PyObject_Malloc (size);
                if (!block || s_keep (block, size) < 0) {
                    PyObject_Free (block);
                    break;
                }
            }
        line = next;
    }
    free (text);
}

void
zygote_heap_fill (void)
{
    if (!HEAP_FILL)
        return;
    s_kept = calloc (HEAP_KEPT_MAX, sizeof *s_kept);
    if (!s_kept)
        return;
    s_fill_pymalloc ();
    s_fill_malloc ();
}
