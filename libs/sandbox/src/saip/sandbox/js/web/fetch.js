// Headers, Response and fetch: a request is sent through the host door, which fetches it (the worker decides what
// it may reach) and replies with the status, headers and the body in base64.
(function (call, text, URL, URLSearchParams) {
  "use strict";
  const { encoder, decoder, toBytes, bytesToBase64, base64ToBytes } = text;

  class Headers {
    constructor(init) {
      this._map = new Map();
      if (!init) return;
      const pairs = init instanceof Headers ? [...init.entries()] : Array.isArray(init) ? init : Object.entries(init);
      for (const [key, value] of pairs) this.append(key, value);
    }
    append(key, value) {
      const name = String(key).toLowerCase();
      const current = this._map.get(name);
      this._map.set(name, current === undefined ? String(value) : current + ", " + String(value));
    }
    set(key, value) { this._map.set(String(key).toLowerCase(), String(value)); }
    get(key) { const value = this._map.get(String(key).toLowerCase()); return value === undefined ? null : value; }
    has(key) { return this._map.has(String(key).toLowerCase()); }
    delete(key) { this._map.delete(String(key).toLowerCase()); }
    forEach(callback, thisArg) { for (const [k, v] of this._map) callback.call(thisArg, v, k, this); }
    keys() { return this._map.keys(); }
    values() { return this._map.values(); }
    entries() { return this._map.entries(); }
    [Symbol.iterator]() { return this._map.entries(); }
  }

  class Response {
    constructor(reply) {
      this.status = reply.status;
      this.statusText = reply.statusText || "";
      this.ok = reply.status >= 200 && reply.status < 300;
      this.url = reply.url;
      this.redirected = Boolean(reply.redirected);
      this.headers = new Headers(reply.headers);
      this._bytes = base64ToBytes(reply.body);
    }
    async arrayBuffer() { return this._bytes.slice().buffer; }
    async bytes() { return this._bytes.slice(); }
    async text() { return decoder.decode(this._bytes); }
    async json() {
      const text = decoder.decode(this._bytes);
      try {
        return JSON.parse(text);
      } catch (error) {
        throw new SyntaxError(`response from ${this.url} is not JSON (${error.message}): ${text.slice(0, 80)}`);
      }
    }
  }

  async function fetch(resource, init = {}) {
    const url = resource instanceof URL ? resource.href : resource && resource.url ? String(resource.url) : String(resource);
    const headers = {};
    new Headers(init.headers || {}).forEach((value, key) => { headers[key] = value; });
    let body = null;
    if (init.body !== undefined && init.body !== null) {
      if (init.body instanceof URLSearchParams) {
        body = bytesToBase64(encoder.encode(init.body.toString()));
        if (!("content-type" in headers)) headers["content-type"] = "application/x-www-form-urlencoded;charset=UTF-8";
      } else if (typeof init.body === "object" && !(init.body instanceof ArrayBuffer) && !ArrayBuffer.isView(init.body)) {
        throw new TypeError("fetch body must be a string, URLSearchParams or bytes; pass JSON.stringify(value) for JSON");
      } else {
        body = bytesToBase64(toBytes(init.body));
        if (typeof init.body === "string" && !("content-type" in headers)) headers["content-type"] = "text/plain;charset=UTF-8";
      }
    }
    const method = String(init.method || "GET").toUpperCase();
    return new Response(await call("fetch", { url, method, headers, body }));
  }

  return { Headers, Response, fetch };
})
