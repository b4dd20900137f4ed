/* The allocator: the C library's, counted, refusing past `limit` (0: no limit), and saying so. */

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "budget.h"

static int budget_allows(Budget *budget, size_t more) {
    if (budget->limit != 0 && budget->used + more > budget->limit) {
        budget->refused = 1;
        return 0;
    }
    return 1;
}

static void *budget_calloc(void *opaque, size_t count, size_t size) {
    Budget *budget = opaque;
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    if (!budget_allows(budget, count * size)) return NULL;
    void *ptr = calloc(count, size);
    if (ptr != NULL) budget->used += malloc_usable_size(ptr);
    return ptr;
}

static void *budget_malloc(void *opaque, size_t size) {
    Budget *budget = opaque;
    if (!budget_allows(budget, size)) return NULL;
    void *ptr = malloc(size);
    if (ptr != NULL) budget->used += malloc_usable_size(ptr);
    return ptr;
}

static void budget_free(void *opaque, void *ptr) {
    Budget *budget = opaque;
    if (ptr == NULL) return;
    budget->used -= malloc_usable_size(ptr);
    free(ptr);
}

static void *budget_realloc(void *opaque, void *ptr, size_t size) {
    Budget *budget = opaque;
    if (ptr == NULL) return budget_malloc(opaque, size);
    size_t old = malloc_usable_size(ptr);
    if (size > old && !budget_allows(budget, size - old)) return NULL;
    void *grown = realloc(ptr, size);
    if (grown == NULL) return NULL;
    budget->used = budget->used - old + malloc_usable_size(grown);
    return grown;
}

static size_t budget_usable_size(const void *ptr) {
    return malloc_usable_size((void *)ptr);
}

const JSMallocFunctions BUDGETED = {
    budget_calloc, budget_malloc, budget_free, budget_realloc, budget_usable_size,
};
