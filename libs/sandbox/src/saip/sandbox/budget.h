/* The memory budget of a runtime: the allocator QuickJS is given, counting what it holds and refusing past a limit. */

#ifndef SAIP_SANDBOX_BUDGET_H
#define SAIP_SANDBOX_BUDGET_H

#include <stddef.h>

#include "quickjs.h"

/* The allocator's state, its opaque pointer: bytes held, the limit (0: no limit), whether it refused since reset. */
typedef struct {
    size_t used;
    size_t limit;
    int refused;
} Budget;

/* The C library's allocator, counted against the Budget passed as opaque, for JS_NewRuntime2 (engine.c). */
extern const JSMallocFunctions BUDGETED;

#endif
