/*  gw_tools.h - tool declarations, checked at conversation_open (gw_tools.c).
*/
#ifndef GW_TOOLS_H_INCLUDED
#define GW_TOOLS_H_INCLUDED

#include "gw_util.h"
#include <jansson.h>

/* A checked copy of a conversation_open tool list (OpenAI's {"type":
   "function", "function": {...}} unwrapped), or NULL with *errmsg
   (malloc'd) naming the tool and the problem. */
GW_MUST_CHECK json_t *gw_tools_validate (const json_t *tools, char **errmsg);
/* The declaration named name in a checked list, or NULL. */
const json_t *gw_tools_find (const json_t *tools, const char *name);
/* A declaration's parameters schema (or its input_schema/inputSchema
   alias), NULL when it takes no parameters. */
const json_t *gw_tools_schema (const json_t *tool);

#endif
