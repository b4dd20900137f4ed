/* saip.sandbox._engine: QuickJS-ng, as little of it as the sandbox needs, for Python. This file holds the module and
 * its two types; budget.c the allocator, bridge.c what crosses between Python and JavaScript.
 *
 * Runtime   one QuickJS runtime: its memory budget (an allocator of our own, which says when it refused) and its
 *           deadline (the interrupt handler, polled by the interpreter every few thousand operations, in every
 *           function and promise job alike; the error it throws cannot be caught).
 * Context   one realm of a runtime, made from a script's bytecode: the script's value is a setup function, called
 *           with the door (a function that only appends its one string argument to the context's outbox) and
 *           `load` (a function that, the first time it is called, evaluates a second script's bytecode and returns
 *           its value with a pool of random bytes as hex, both given with the first script: what the realm may
 *           never need is not read nor made until it does); what the setup returns is the entry, the one function
 *           Python calls afterwards, with strings only. After each call the runtime's pending jobs run to the end,
 *           so a call returns with the code settled as far as it can without the host.
 *
 * No other name of the host is given to JavaScript, and values cross only as strings (surrogates pass through).
 */

#include "engine.h" /* first: Python.h comes before the C library's headers */

#include <stdint.h>
#include <time.h>

#include "bridge.h"

PyObject *ScriptError;

static double monotonic(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static int interrupt(JSRuntime *rt, void *opaque) {
    RuntimeObject *self = opaque;
    if (self->deadline > 0 && monotonic() >= self->deadline) {
        self->interrupted = 1;
        return 1;
    }
    return 0;
}

/* No module is ever loaded: `import()` fails inside the code, as V8 without a host's loader says it. */
static JSModuleDef *no_modules(JSContext *ctx, const char *name, void *opaque) {
    JS_ThrowTypeError(ctx, "Not supported: the sandbox loads no modules ('%s'); use the runtime's helpers", name);
    return NULL;
}

static PyObject *Runtime_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"stack_size", NULL};
    Py_ssize_t stack_size = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|n", keywords, &stack_size)) return NULL;
    RuntimeObject *self = (RuntimeObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->rt = JS_NewRuntime2(&BUDGETED, &self->budget);
    if (self->rt == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (stack_size > 0) JS_SetMaxStackSize(self->rt, (size_t)stack_size);
    JS_SetInterruptHandler(self->rt, interrupt, self);
    JS_SetModuleLoaderFunc(self->rt, NULL, no_modules, NULL);
    return (PyObject *)self;
}

static void Runtime_dealloc(RuntimeObject *self) {
    if (self->rt != NULL) {
        self->budget.limit = 0;
        JS_FreeRuntime(self->rt);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Runtime_limit(RuntimeObject *self, PyObject *args) {
    Py_ssize_t memory;
    double deadline;
    if (!PyArg_ParseTuple(args, "nd", &memory, &deadline)) return NULL;
    self->budget.limit = memory > 0 ? self->budget.used + (size_t)memory : 0;
    self->budget.refused = 0;
    self->deadline = deadline;
    self->interrupted = 0;
    Py_RETURN_NONE;
}

/* Run the runtime's pending jobs until none is left; 0, or -1 with the job's exception pending in its context. */
static int settle(JSRuntime *rt, JSContext **failed) {
    for (;;) {
        JSContext *job;
        int ran = JS_ExecutePendingJob(rt, &job);
        if (ran == 0) return 0;
        if (ran < 0) {
            *failed = job;
            return -1;
        }
    }
}

static PyTypeObject ContextType;

/* A realm with the language's own objects, and nothing of the host's (no performance, no atob: the runtime has its
 * own, whose errors the guide documents). */
static JSContext *new_realm(JSRuntime *rt) {
    JSContext *ctx = JS_NewContextRaw(rt);
    if (ctx == NULL) return NULL;
    if (JS_AddIntrinsicBaseObjects(ctx) || JS_AddIntrinsicDate(ctx) || JS_AddIntrinsicEval(ctx) ||
        JS_AddIntrinsicRegExp(ctx) || JS_AddIntrinsicJSON(ctx) || JS_AddIntrinsicProxy(ctx) ||
        JS_AddIntrinsicMapSet(ctx) || JS_AddIntrinsicTypedArrays(ctx) || JS_AddIntrinsicPromise(ctx) ||
        JS_AddIntrinsicWeakRef(ctx)) {
        JS_FreeContext(ctx);
        return NULL;
    }
    return ctx;
}

static PyObject *Runtime_compile(RuntimeObject *self, PyObject *args) {
    PyObject *source;
    const char *name;
    if (!PyArg_ParseTuple(args, "Us", &source, &name)) return NULL;
    Py_ssize_t length;
    const char *text = PyUnicode_AsUTF8AndSize(source, &length);
    if (text == NULL) return NULL;
    JSContext *ctx = new_realm(self->rt);
    if (ctx == NULL) return PyErr_NoMemory();
    PyObject *result = NULL;
    JSValue compiled = JS_Eval(ctx, text, (size_t)length, name, JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
    if (JS_IsException(compiled)) {
        raise_pending(ctx);
    } else {
        size_t size;
        int flags = JS_WRITE_OBJ_BYTECODE | JS_WRITE_OBJ_STRIP_SOURCE | JS_WRITE_OBJ_STRIP_DEBUG;
        uint8_t *bytecode = JS_WriteObject(ctx, &size, compiled, flags);
        if (bytecode == NULL) {
            raise_pending(ctx);
        } else {
            result = PyBytes_FromStringAndSize((const char *)bytecode, (Py_ssize_t)size);
            js_free(ctx, bytecode);
        }
    }
    JS_FreeValue(ctx, compiled);
    JS_FreeContext(ctx);
    return result;
}

/* A new context: the bytecode evaluated, its value called with the door and `load` (for `later` and `pool`), what
 * that returns kept as the entry. */
static PyObject *Runtime_context(RuntimeObject *self, PyObject *args) {
    Py_buffer bytecode;
    PyObject *later;
    PyObject *pool;
    if (!PyArg_ParseTuple(args, "y*SS", &bytecode, &later, &pool)) return NULL;
    ContextObject *made = PyObject_New(ContextObject, &ContextType);
    if (made == NULL) {
        PyBuffer_Release(&bytecode);
        return NULL;
    }
    Py_INCREF(self);
    made->runtime = self;
    made->entry = JS_UNDEFINED;
    made->later = Py_NewRef(later);
    made->pool = Py_NewRef(pool);
    made->outbox = PyList_New(0);
    made->ctx = new_realm(self->rt);
    if (made->outbox == NULL || made->ctx == NULL) {
        PyBuffer_Release(&bytecode);
        Py_DECREF(made);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    JSContext *ctx = made->ctx;
    JS_SetContextOpaque(ctx, made);
    JSValue script = JS_ReadObject(ctx, bytecode.buf, (size_t)bytecode.len, JS_READ_OBJ_BYTECODE);
    PyBuffer_Release(&bytecode);
    if (JS_IsException(script)) goto failed;
    JSValue setup = JS_EvalFunction(ctx, script);
    if (JS_IsException(setup)) goto failed;
    JSValue given[2] = {JS_NewCFunction(ctx, door, "door", 1), JS_NewCFunction(ctx, load, "load", 0)};
    made->entry = JS_Call(ctx, setup, JS_UNDEFINED, 2, given);
    for (int i = 0; i < 2; i++) JS_FreeValue(ctx, given[i]);
    JS_FreeValue(ctx, setup);
    if (JS_IsException(made->entry)) goto failed;
    if (!JS_IsFunction(ctx, made->entry)) {
        PyErr_SetString(ScriptError, "the script's setup did not return a function");
        Py_DECREF(made);
        return NULL;
    }
    JSContext *job = ctx;
    if (settle(self->rt, &job) < 0) {
        raise_pending(job);
        Py_DECREF(made);
        return NULL;
    }
    return (PyObject *)made;
failed:
    raise_pending(ctx);
    Py_DECREF(made);
    return NULL;
}

static PyObject *Runtime_get_used(RuntimeObject *self, void *closure) {
    return PyLong_FromSize_t(self->budget.used);
}

static PyObject *Runtime_get_refused(RuntimeObject *self, void *closure) {
    return PyBool_FromLong(self->budget.refused);
}

static PyObject *Runtime_get_interrupted(RuntimeObject *self, void *closure) {
    return PyBool_FromLong(self->interrupted);
}

static PyObject *Runtime_collect(RuntimeObject *self, PyObject *unused) {
    JS_RunGC(self->rt);
    Py_RETURN_NONE;
}

static PyMethodDef Runtime_methods[] = {
    {"limit", (PyCFunction)Runtime_limit, METH_VARARGS, "limit(memory, deadline): the budget and deadline of a call"},
    {"compile", (PyCFunction)Runtime_compile, METH_VARARGS, "compile(source, name) -> the script's bytecode"},
    {"context", (PyCFunction)Runtime_context, METH_VARARGS, "context(bytecode, later, pool) -> a new Context"},
    {"collect", (PyCFunction)Runtime_collect, METH_NOARGS, "collect(): run the cycle collector"},
    {NULL},
};

static PyGetSetDef Runtime_getset[] = {
    {"used", (getter)Runtime_get_used, NULL, "bytes allocated now", NULL},
    {"refused", (getter)Runtime_get_refused, NULL, "an allocation was refused since the last limit()", NULL},
    {"interrupted", (getter)Runtime_get_interrupted, NULL, "the deadline stopped the code since the last limit()", NULL},
    {NULL},
};

static PyTypeObject RuntimeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "saip.sandbox._engine.Runtime",
    .tp_basicsize = sizeof(RuntimeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Runtime(stack_size=0): one QuickJS runtime, its memory budget and deadline",
    .tp_new = Runtime_new,
    .tp_dealloc = (destructor)Runtime_dealloc,
    .tp_methods = Runtime_methods,
    .tp_getset = Runtime_getset,
};

static void Context_release(ContextObject *self) {
    if (self->ctx != NULL) {
        JS_SetContextOpaque(self->ctx, NULL);
        JS_FreeValue(self->ctx, self->entry);
        self->entry = JS_UNDEFINED;
        JS_FreeContext(self->ctx);
        self->ctx = NULL;
    }
}

static void Context_dealloc(ContextObject *self) {
    Context_release(self);
    Py_XDECREF(self->later);
    Py_XDECREF(self->pool);
    Py_XDECREF(self->outbox);
    Py_XDECREF(self->runtime);
    PyObject_Free(self);
}

/* entry(*arguments), then every pending job; the entry's value as a string. */
static PyObject *Context_call(ContextObject *self, PyObject *args) {
    if (self->ctx == NULL) {
        PyErr_SetString(PyExc_ValueError, "the context is closed");
        return NULL;
    }
    JSContext *ctx = self->ctx;
    Py_ssize_t count = PyTuple_GET_SIZE(args);
    if (count > 8) {
        PyErr_SetString(PyExc_ValueError, "at most 8 arguments");
        return NULL;
    }
    JSValue given[8];
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(args, i);
        if (!PyUnicode_Check(item)) {
            for (Py_ssize_t j = 0; j < i; j++) JS_FreeValue(ctx, given[j]);
            PyErr_SetString(PyExc_TypeError, "the entry takes strings");
            return NULL;
        }
        given[i] = to_js(ctx, item);
        if (JS_IsException(given[i])) {
            for (Py_ssize_t j = 0; j < i; j++) JS_FreeValue(ctx, given[j]);
            if (!PyErr_Occurred()) raise_pending(ctx);
            return NULL;
        }
    }
    JSValue value = JS_Call(ctx, self->entry, JS_UNDEFINED, (int)count, given);
    for (Py_ssize_t i = 0; i < count; i++) JS_FreeValue(ctx, given[i]);
    if (JS_IsException(value)) return raise_pending(ctx);
    JSContext *job = ctx;
    if (settle(self->runtime->rt, &job) < 0) {
        JS_FreeValue(ctx, value);
        return raise_pending(job);
    }
    PyObject *result = to_python(ctx, value);
    JS_FreeValue(ctx, value);
    if (result == NULL && !PyErr_Occurred()) return raise_pending(ctx);
    return result;
}

/* The door's messages since the last take, oldest first. */
static PyObject *Context_take(ContextObject *self, PyObject *unused) {
    PyObject *taken = self->outbox;
    self->outbox = PyList_New(0);
    if (self->outbox == NULL) {
        self->outbox = taken;
        return NULL;
    }
    return taken;
}

static PyObject *Context_close(ContextObject *self, PyObject *unused) {
    Context_release(self);
    Py_RETURN_NONE;
}

static PyMethodDef Context_methods[] = {
    {"call", (PyCFunction)Context_call, METH_VARARGS, "call(*strings) -> the entry's value, jobs run"},
    {"take", (PyCFunction)Context_take, METH_NOARGS, "take() -> the door's messages since the last take"},
    {"close", (PyCFunction)Context_close, METH_NOARGS, "close(): free the context"},
    {NULL},
};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "saip.sandbox._engine.Context",
    .tp_basicsize = sizeof(ContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A realm of a Runtime, made by Runtime.context",
    .tp_dealloc = (destructor)Context_dealloc,
    .tp_methods = Context_methods,
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "saip.sandbox._engine", "QuickJS-ng for the saip sandbox", -1, NULL,
};

PyMODINIT_FUNC PyInit__engine(void) {
    if (PyType_Ready(&RuntimeType) < 0 || PyType_Ready(&ContextType) < 0) return NULL;
    PyObject *module = PyModule_Create(&engine_module);
    if (module == NULL) return NULL;
    ScriptError = PyErr_NewException("saip.sandbox._engine.ScriptError", NULL, NULL);
    if (ScriptError == NULL || PyModule_AddObjectRef(module, "ScriptError", ScriptError) < 0 ||
        PyModule_AddObjectRef(module, "Runtime", (PyObject *)&RuntimeType) < 0 ||
        PyModule_AddObjectRef(module, "Context", (PyObject *)&ContextType) < 0 ||
        PyModule_AddStringConstant(module, "VERSION", JS_GetVersion()) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
