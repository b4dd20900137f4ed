/* The extension's two objects and its exception, as engine.c defines them and bridge.c's host functions reach them. */

#ifndef SAIP_SANDBOX_ENGINE_H
#define SAIP_SANDBOX_ENGINE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "budget.h"
#include "quickjs.h"

/* saip.sandbox._engine.ScriptError, made by the module's init: what the code threw, as text. */
extern PyObject *ScriptError;

typedef struct {
    PyObject_HEAD
    JSRuntime *rt;
    Budget budget;
    double deadline; /* CLOCK_MONOTONIC seconds, Python's time.monotonic(); 0: none */
    int interrupted;
} RuntimeObject;

/* A Context; its JSContext's opaque pointer, which the door and `load` read (NULL once closed). */
typedef struct {
    PyObject_HEAD
    RuntimeObject *runtime;
    JSContext *ctx;
    JSValue entry;
    PyObject *outbox; /* list of str */
    PyObject *later;  /* bytes: the second script's bytecode, until `load` reads it */
    PyObject *pool;   /* bytes: the random pool `load` hands over with it */
} ContextObject;

#endif
