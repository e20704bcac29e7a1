/*  gw_schema.h - the JSON Schema subset of tool parameters (gw_schema.c).
*/
#ifndef GW_SCHEMA_H_INCLUDED
#define GW_SCHEMA_H_INCLUDED

#include "gw_util.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether schema uses only the supported keywords, well formed; otherwise
   false with problem naming the place (where + path) and the keyword. */
GW_MUST_CHECK bool gw_schema_supported (const json_t *schema, const char *where, char *problem, size_t size);
/* Whether a call's arguments meet a supported parameters schema (NULL: no
   parameters); otherwise false with problem naming the argument and the
   rule it breaks. */
GW_MUST_CHECK bool gw_schema_check_arguments (const json_t *parameters, const json_t *arguments, char *problem, size_t size);

#endif
