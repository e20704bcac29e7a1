/*  mcp_sessions.c - the MCP sessions a server minted (streamable HTTP's
    handshake era): each an unguessable id and the id of its own default
    conversation, at most max of them.

    A session id is 128 random bits (libsodium, hex): the server mints it
    at initialize, and only a minted one is known, so no client can name
    another's session, to cancel its calls or end it, without having been
    given its id. Request ids are unique per client only, so the session
    is also the scope of a cancel (mcp_server.c). The table is bounded:
    a client that initializes in a loop pushes out the session used least
    recently, which the server then ends as a DELETE would (its calls
    cancelled, its default conversation closed); its client gets 404 and
    initializes again, as the transport spec says. A session costs ~200
    bytes here; its default conversation, once code ran in it, a
    conversation of the gateway's (bounded by max_conversations).
*/
#include "mcp.h"

#include <string.h>

typedef struct {
    char id[WIRE_ID_SIZE];
    char conversation[64]; /* its default conversation's id */
    void *handle;          /* in lru */
} session_t;

struct mcp_sessions {
    zhashx_t *by_id; /* id -> session_t (owned) */
    zlistx_t *lru;   /* session_t, least recently used first */
    size_t max;
};

static void
s_session_free (void **item)
{
    free (*item);
    *item = NULL;
}

mcp_sessions_t *
mcp_sessions_new (size_t max)
{
    mcp_sessions_t *self = wire_xcalloc (1, sizeof *self);
    self->by_id = zhashx_new ();
    zhashx_set_destructor (self->by_id, s_session_free);
    self->lru = zlistx_new ();
    self->max = max;
    return self;
}

void
mcp_sessions_destroy (mcp_sessions_t **self_p)
{
    mcp_sessions_t *self = *self_p;
    if (!self)
        return;
    zlistx_destroy (&self->lru);
    zhashx_destroy (&self->by_id);
    free (self);
    *self_p = NULL;
}

const char *
mcp_sessions_oldest (mcp_sessions_t *self)
{
    session_t *s = zlistx_first (self->lru);
    return s ? s->id : NULL;
}

const char *
mcp_sessions_add (mcp_sessions_t *self)
{
    if (zhashx_size (self->by_id) >= self->max)
        return NULL;
    session_t *s = wire_xcalloc (1, sizeof *s);
    wire_id_new (s->id);
    char conv[WIRE_ID_SIZE];
    wire_id_new (conv);
    snprintf (s->conversation, sizeof s->conversation, "mcp-%.12s-session", conv);
    s->handle = zlistx_add_end (self->lru, s);
    zhashx_insert (self->by_id, s->id, s);
    return s->id;
}

const char *
mcp_sessions_find (mcp_sessions_t *self, const char *id)
{
    session_t *s = id ? zhashx_lookup (self->by_id, id) : NULL;
    if (!s)
        return NULL;
    zlistx_move_end (self->lru, s->handle);
    return s->conversation;
}

void
mcp_sessions_remove (mcp_sessions_t *self, const char *id)
{
    session_t *s = zhashx_lookup (self->by_id, id);
    if (!s)
        return;
    zlistx_detach (self->lru, s->handle);
    zhashx_delete (self->by_id, id); /* frees s: id may be its own */
}

size_t
mcp_sessions_size (const mcp_sessions_t *self)
{
    return zhashx_size (self->by_id);
}
