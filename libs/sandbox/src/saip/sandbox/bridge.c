/* Between Python and a realm: strings each way, a thrown value as ScriptError, and the door and `load`, the two host
 * functions a script's setup is given. */

#include "bridge.h" /* first: Python.h comes before the C library's headers */

#include <stdint.h>

JSValue to_js(JSContext *ctx, PyObject *text) {
    PyObject *bytes = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
    if (bytes == NULL) return JS_EXCEPTION;
    JSValue value = JS_NewStringLen(ctx, PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
    Py_DECREF(bytes);
    return value;
}

PyObject *to_python(JSContext *ctx, JSValueConst value) {
    size_t length;
    const char *text = JS_ToCStringLen(ctx, &length, value);
    if (text == NULL) return NULL;
    PyObject *result = PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "surrogatepass");
    JS_FreeCString(ctx, text);
    return result;
}

PyObject *raise_pending(JSContext *ctx) {
    JSValue thrown = JS_GetException(ctx);
    size_t length;
    const char *text = JS_ToCStringLen(ctx, &length, thrown);
    if (text != NULL) {
        PyObject *message = PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "replace");
        JS_FreeCString(ctx, text);
        if (message != NULL) {
            PyErr_SetObject(ScriptError, message);
            Py_DECREF(message);
        }
    } else {
        JSValue again = JS_GetException(ctx); /* toString itself threw (out of memory, interrupted) */
        JS_FreeValue(ctx, again);
        PyErr_SetString(ScriptError, "an exception that cannot be shown as text");
    }
    JS_FreeValue(ctx, thrown);
    return NULL;
}

JSValue door(JSContext *ctx, JSValueConst this_value, int argc, JSValueConst *argv) {
    ContextObject *self = JS_GetContextOpaque(ctx);
    if (self == NULL || argc < 1) return JS_UNDEFINED;
    PyObject *message = to_python(ctx, argv[0]);
    if (message == NULL) {
        PyErr_Clear();
        return JS_ThrowTypeError(ctx, "the host door takes a string");
    }
    int appended = PyList_Append(self->outbox, message);
    Py_DECREF(message);
    if (appended < 0) {
        PyErr_Clear();
        return JS_ThrowOutOfMemory(ctx);
    }
    return JS_UNDEFINED;
}

/* The bytes as lowercase hex, a JS string. */
static JSValue hex_string(JSContext *ctx, PyObject *bytes) {
    static const char digits[] = "0123456789abcdef";
    Py_ssize_t size = PyBytes_GET_SIZE(bytes);
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(bytes);
    char *text = js_malloc(ctx, (size_t)size * 2 + 1);
    if (text == NULL) return JS_EXCEPTION;
    for (Py_ssize_t i = 0; i < size; i++) {
        text[2 * i] = digits[data[i] >> 4];
        text[2 * i + 1] = digits[data[i] & 15];
    }
    JSValue value = JS_NewStringLen(ctx, text, (size_t)size * 2);
    js_free(ctx, text);
    return value;
}

JSValue load(JSContext *ctx, JSValueConst this_value, int argc, JSValueConst *argv) {
    ContextObject *self = JS_GetContextOpaque(ctx);
    if (self == NULL || self->later == NULL) return JS_ThrowTypeError(ctx, "nothing more to load");
    PyObject *later = self->later, *pool = self->pool;
    self->later = self->pool = NULL;
    JSValue script = JS_ReadObject(ctx, (const uint8_t *)PyBytes_AS_STRING(later), (size_t)PyBytes_GET_SIZE(later),
                                   JS_READ_OBJ_BYTECODE);
    Py_DECREF(later);
    JSValue value = JS_IsException(script) ? JS_EXCEPTION : JS_EvalFunction(ctx, script);
    JSValue random = JS_IsException(value) ? JS_EXCEPTION : hex_string(ctx, pool);
    Py_DECREF(pool);
    if (JS_IsException(random)) {
        JS_FreeValue(ctx, value);
        return JS_EXCEPTION;
    }
    JSValue loaded = JS_NewArray(ctx);
    if (JS_IsException(loaded) || JS_SetPropertyUint32(ctx, loaded, 0, value) < 0 ||
        JS_SetPropertyUint32(ctx, loaded, 1, random) < 0) {
        JS_FreeValue(ctx, loaded);
        return JS_EXCEPTION;
    }
    return loaded;
}
