/*  wire_replay.c - a bounded set of recently seen signatures.

    A ring of the last `capacity` signatures (oldest overwritten first) with a
    chained hash index over it, so add is O(1) and memory is bounded. The ring
    starts small and doubles up to capacity: a gateway holds two of these per
    conversation with a capacity of 65536, and zeroing 3 MB per cache at
    every open (and walking it at every close) was most of an open's CPU,
    while a short conversation sees a few hundred messages. Entries are
    compared as bytes, so any signature, even one with NULs, is safe.
*/
#include "wire_private.h"
#include <string.h>

#define REPLAY_FIRST_SIZE 64

typedef struct wire_replay_entry {
    char *sig;
    size_t len;
    uint64_t hash;
    struct wire_replay_entry *next; /* same bucket */
} wire_replay_entry_t;

struct wire_replay {
    wire_replay_entry_t *ring; /* size entries, the first count in use */
    size_t size;               /* allocated slots, <= capacity */
    size_t count;              /* slots in use */
    size_t capacity;           /* the most signatures remembered */
    size_t oldest;             /* once full: next ring slot to overwrite */
    wire_replay_entry_t **buckets;
    size_t n_buckets;          /* a power of two >= 2 * size */
};

/* FNV-1a: signatures are HMACs, already uniform; no need for more. */
static uint64_t
s_hash (const char *data, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char) data[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void
s_link (wire_replay_t *self, wire_replay_entry_t *entry)
{
    wire_replay_entry_t **head = &self->buckets[entry->hash & (self->n_buckets - 1)];
    entry->next = *head;
    *head = entry;
}

/* Gives the ring size slots and an index to match; the entries in use keep
   their order, so the ring is still oldest-first when it first fills. */
static void
s_resize (wire_replay_t *self, size_t size)
{
    size_t n_buckets = 16;
    while (n_buckets < 2 * size)
        n_buckets *= 2;
    free (self->buckets);
    self->buckets = wire_xcalloc (n_buckets, sizeof *self->buckets);
    self->ring = wire_xreallocarray (self->ring, size, sizeof *self->ring);
    self->n_buckets = n_buckets;
    self->size = size;
    for (size_t i = 0; i < self->count; i++)
        s_link (self, &self->ring[i]);
}

wire_replay_t *
wire_replay_new (size_t capacity)
{
    if (capacity == 0)
        capacity = 1;
    wire_replay_t *self = wire_xcalloc (1, sizeof *self);
    self->capacity = capacity;
    s_resize (self, capacity < REPLAY_FIRST_SIZE ? capacity : REPLAY_FIRST_SIZE);
    return self;
}

void
wire_replay_destroy (wire_replay_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    wire_replay_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        free (self->ring[i].sig);
    free (self->ring);
    free (self->buckets);
    free (self);
    *self_p = NULL;
}

/* Unlinks entry from its bucket chain. */
static void
s_unlink (wire_replay_t *self, wire_replay_entry_t *entry)
{
    wire_replay_entry_t **link = &self->buckets[entry->hash & (self->n_buckets - 1)];
    while (*link && *link != entry)
        link = &(*link)->next;
    if (*link)
        *link = entry->next;
}

bool
wire_replay_add (wire_replay_t *self, const char *sig, size_t len)
{
    if (!self)
        return true; /* no cache: nothing was seen */
    uint64_t hash = s_hash (sig, len);
    for (wire_replay_entry_t *e = self->buckets[hash & (self->n_buckets - 1)]; e; e = e->next)
        if (e->hash == hash && e->len == len && memcmp (e->sig, sig, len) == 0)
            return false;

    wire_replay_entry_t *slot;
    if (self->count == self->size && self->size < self->capacity)
        s_resize (self, self->size * 2 < self->capacity ? self->size * 2 : self->capacity);
    char *copy = wire_xmalloc (len);
    if (len)
        memcpy (copy, sig, len);
    if (self->count < self->size)
        slot = &self->ring[self->count++];
    else {
        slot = &self->ring[self->oldest];
        s_unlink (self, slot);
        free (slot->sig);
        self->oldest = (self->oldest + 1) % self->capacity;
    }
    slot->sig = copy;
    slot->len = len;
    slot->hash = hash;
    s_link (self, slot);
    return true;
}

int
wire_replay_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_replay: ");
    wire_replay_t *replay = wire_replay_new (3);
    WIRE_CHECK (replay);
    WIRE_CHECK (wire_replay_add (replay, "aaaa", 4));
    WIRE_CHECK (!wire_replay_add (replay, "aaaa", 4));
    WIRE_CHECK (wire_replay_add (replay, "aaa", 3)); /* prefix is different */
    WIRE_CHECK (wire_replay_add (replay, "a\0b", 3)); /* NULs compare as bytes */
    WIRE_CHECK (wire_replay_add (replay, "a\0c", 3));
    /* Capacity 3: "aaaa" (oldest) was forgotten, the newer three are kept. */
    WIRE_CHECK (!wire_replay_add (replay, "a\0c", 3));
    WIRE_CHECK (!wire_replay_add (replay, "a\0b", 3));
    WIRE_CHECK (wire_replay_add (replay, "aaaa", 4));
    WIRE_CHECK (wire_replay_add (replay, "", 0));
    WIRE_CHECK (!wire_replay_add (replay, "", 0));
    wire_replay_destroy (&replay);
    WIRE_CHECK (replay == NULL);
    wire_replay_destroy (&replay);

    /* Many entries: hash chains stay consistent through eviction. */
    replay = wire_replay_new (1000);
    char sig[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf (sig, sizeof sig, "sig-%d", i);
        WIRE_CHECK (wire_replay_add (replay, sig, (size_t) n));
        WIRE_CHECK (!wire_replay_add (replay, sig, (size_t) n));
    }
    for (int i = 4000; i < 5000; i++) {
        int n = snprintf (sig, sizeof sig, "sig-%d", i);
        WIRE_CHECK (!wire_replay_add (replay, sig, (size_t) n));
    }
    int n = snprintf (sig, sizeof sig, "sig-%d", 3999);
    WIRE_CHECK (wire_replay_add (replay, sig, (size_t) n));
    wire_replay_destroy (&replay);

    /* Growth up to a capacity that is no power of two: all 100 are kept,
       the 101st forgets the 1st. */
    replay = wire_replay_new (100);
    for (int i = 0; i < 100; i++) {
        int len = snprintf (sig, sizeof sig, "g-%d", i);
        WIRE_CHECK (wire_replay_add (replay, sig, (size_t) len));
    }
    for (int i = 0; i < 100; i++) {
        int len = snprintf (sig, sizeof sig, "g-%d", i);
        WIRE_CHECK (!wire_replay_add (replay, sig, (size_t) len));
    }
    WIRE_CHECK (wire_replay_add (replay, "g-100", 5));
    WIRE_CHECK (wire_replay_add (replay, "g-0", 3));
    WIRE_CHECK (!wire_replay_add (replay, "g-99", 4));
    wire_replay_destroy (&replay);

    replay = wire_replay_new (0); /* treated as 1 */
    WIRE_CHECK (wire_replay_add (replay, "x", 1));
    WIRE_CHECK (!wire_replay_add (replay, "x", 1));
    WIRE_CHECK (wire_replay_add (replay, "y", 1));
    WIRE_CHECK (wire_replay_add (replay, "x", 1));
    wire_replay_destroy (&replay);
    WIRE_CHECK (wire_replay_add (NULL, "x", 1));
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
