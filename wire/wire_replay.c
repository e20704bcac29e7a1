/*  wire_replay.c - a bounded set of recently seen signatures.

    A ring of the last `capacity` signatures (oldest overwritten first) with a
    chained hash index over it, so add is O(1) and memory is fixed. Entries
    are compared as bytes, so any signature, even one with NULs, is safe.
*/
#include "wire_private.h"
#include <string.h>

typedef struct wire_replay_entry {
    char *sig;
    size_t len;
    uint64_t hash;
    struct wire_replay_entry *next; /* same bucket */
} wire_replay_entry_t;

struct wire_replay {
    wire_replay_entry_t *ring; /* capacity entries, sig NULL when unused */
    size_t capacity;
    size_t oldest;             /* next ring slot to overwrite */
    wire_replay_entry_t **buckets;
    size_t n_buckets;          /* a power of two >= 2 * capacity */
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

wire_replay_t *
wire_replay_new (size_t capacity)
{
    if (capacity == 0)
        capacity = 1;
    wire_replay_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->capacity = capacity;
    self->n_buckets = 16;
    while (self->n_buckets < 2 * capacity)
        self->n_buckets *= 2;
    self->ring = calloc (capacity, sizeof *self->ring);
    self->buckets = calloc (self->n_buckets, sizeof *self->buckets);
    if (!self->ring || !self->buckets) {
        wire_replay_destroy (&self);
        return NULL;
    }
    return self;
}

void
wire_replay_destroy (wire_replay_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    wire_replay_t *self = *self_p;
    if (self->ring)
        for (size_t i = 0; i < self->capacity; i++)
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
    size_t bucket = hash & (self->n_buckets - 1);
    for (wire_replay_entry_t *e = self->buckets[bucket]; e; e = e->next)
        if (e->hash == hash && e->len == len && memcmp (e->sig, sig, len) == 0)
            return false;

    char *copy = malloc (len ? len : 1);
    if (!copy)
        return false; /* cannot remember it: refuse rather than allow a replay */
    if (len)
        memcpy (copy, sig, len);

    wire_replay_entry_t *slot = &self->ring[self->oldest];
    if (slot->sig) {
        s_unlink (self, slot);
        free (slot->sig);
    }
    slot->sig = copy;
    slot->len = len;
    slot->hash = hash;
    slot->next = self->buckets[bucket];
    self->buckets[bucket] = slot;
    self->oldest = (self->oldest + 1) % self->capacity;
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
