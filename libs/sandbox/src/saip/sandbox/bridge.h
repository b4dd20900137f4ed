/* What crosses between Python and a realm: strings each way, a thrown value as ScriptError, and the two host
 * functions a script's setup is given (bridge.c). */

#ifndef SAIP_SANDBOX_BRIDGE_H
#define SAIP_SANDBOX_BRIDGE_H

#include "engine.h"

/* A Python str as a JS string, through UTF-8 (lone surrogates pass through); JS_EXCEPTION, with a
 * Python error set or a JS exception pending, if it fails. */
JSValue to_js(JSContext *ctx, PyObject *text);

/* A JS value's string as a Python str (lone surrogates pass through); NULL with a JS exception pending or a Python
 * error set if it fails. */
PyObject *to_python(JSContext *ctx, JSValueConst value);

/* The context's pending exception, taken, raised as ScriptError(the thrown value as a string); NULL, for the caller
 * to return. */
PyObject *raise_pending(JSContext *ctx);

/* The door: appends its one string argument to the Context's outbox. */
JSValue door(JSContext *ctx, JSValueConst this_value, int argc, JSValueConst *argv);

/* `load`: [the second script's value, the random pool as hex], once per Context. */
JSValue load(JSContext *ctx, JSValueConst this_value, int argc, JSValueConst *argv);

#endif
