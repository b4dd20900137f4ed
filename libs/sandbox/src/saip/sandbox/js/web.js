// The web helpers of the runtime (js/runtime.js): UTF-8, base64, URL, URLSearchParams, Headers, fetch and crypto.
// A context reads this script only when its code first names one of them (the runtime's `load`), so a call that uses
// none of them pays neither for reading it nor for making them. The script's value is a function of what the
// runtime took before the code ran: the host door's request function and the call's random pool.
(function (host, randomHex) {
  "use strict";

  // UTF-8 (TextEncoder/TextDecoder) and base64 (atob/btoa).
  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      const text = String(input);
      const out = [];
      for (let i = 0; i < text.length; i++) {
        let code = text.codePointAt(i);
        if (code > 0xffff) i++;
        else if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
        if (code < 0x80) out.push(code);
        else if (code < 0x800) out.push(0xc0 | (code >> 6), 0x80 | (code & 63));
        else if (code < 0x10000) out.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
        else
          out.push(
            0xf0 | (code >> 18),
            0x80 | ((code >> 12) & 63),
            0x80 | ((code >> 6) & 63),
            0x80 | (code & 63),
          );
      }
      return new Uint8Array(out);
    }
  }
  class TextDecoder {
    get encoding() {
      return "utf-8";
    }
    decode(input) {
      const bytes = toBytes(input === undefined ? new Uint8Array(0) : input);
      const parts = [];
      let chunk = [];
      for (let i = 0; i < bytes.length; ) {
        const b = bytes[i];
        let code = 0xfffd;
        let size = 1;
        if (b < 0x80) code = b;
        else if (b >= 0xc2 && b < 0xe0 && (bytes[i + 1] & 0xc0) === 0x80) {
          code = ((b & 31) << 6) | (bytes[i + 1] & 63);
          size = 2;
        } else if (b >= 0xe0 && b < 0xf0 && (bytes[i + 1] & 0xc0) === 0x80 && (bytes[i + 2] & 0xc0) === 0x80) {
          code = ((b & 15) << 12) | ((bytes[i + 1] & 63) << 6) | (bytes[i + 2] & 63);
          size = 3;
          if (code < 0x800 || (code >= 0xd800 && code <= 0xdfff)) code = 0xfffd;
        } else if (
          b >= 0xf0 && b < 0xf5 && (bytes[i + 1] & 0xc0) === 0x80 && (bytes[i + 2] & 0xc0) === 0x80 &&
          (bytes[i + 3] & 0xc0) === 0x80
        ) {
          code = ((b & 7) << 18) | ((bytes[i + 1] & 63) << 12) | ((bytes[i + 2] & 63) << 6) | (bytes[i + 3] & 63);
          size = 4;
          if (code < 0x10000 || code > 0x10ffff) code = 0xfffd;
        }
        chunk.push(code);
        i += size;
        if (chunk.length >= 8192) {
          parts.push(String.fromCodePoint(...chunk));
          chunk = [];
        }
      }
      parts.push(String.fromCodePoint(...chunk));
      return parts.join("");
    }
  }
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  function toBytes(data) {
    if (typeof data === "string") return encoder.encode(data);
    if (data instanceof ArrayBuffer) return new Uint8Array(data);
    if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    throw new TypeError("expected a string, an ArrayBuffer or a typed array");
  }

  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64_INDEX = {};
  for (let i = 0; i < B64.length; i++) B64_INDEX[B64[i]] = i;
  function bytesToBase64(bytes) {
    const out = [];
    for (let i = 0; i < bytes.length; i += 3) {
      const n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8) | (bytes[i + 2] || 0);
      out.push(
        B64[(n >> 18) & 63],
        B64[(n >> 12) & 63],
        i + 1 < bytes.length ? B64[(n >> 6) & 63] : "=",
        i + 2 < bytes.length ? B64[n & 63] : "=",
      );
    }
    return out.join("");
  }
  function base64ToBytes(text) {
    const clean = String(text).replace(/[\t\n\f\r ]/g, "").replace(/={1,2}$/, "");
    if (clean.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(clean)) {
      throw new Error("InvalidCharacterError: the string to be decoded is not correctly base64-encoded");
    }
    const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
    let buffer = 0;
    let bits = 0;
    let j = 0;
    for (let i = 0; i < clean.length; i++) {
      buffer = (buffer << 6) | B64_INDEX[clean[i]];
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out[j++] = (buffer >> bits) & 255;
      }
    }
    return out;
  }
  const btoa = (text) => {
    const value = String(text);
    const bytes = new Uint8Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code > 255) throw new Error("InvalidCharacterError: btoa takes Latin-1 text; encode UTF-8 first");
      bytes[i] = code;
    }
    return bytesToBase64(bytes);
  };
  const atob = (text) => {
    const bytes = base64ToBytes(text);
    let out = "";
    for (let i = 0; i < bytes.length; i += 8192) out += String.fromCharCode(...bytes.subarray(i, i + 8192));
    return out;
  };

  // URLSearchParams and URL (WHATWG-shaped; host names must be ASCII, the xn-- form for international ones).
  const formEncode = (text) =>
    encodeURIComponent(text)
      .replace(/%20/g, "+")
      .replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  const formDecode = (text) => {
    try {
      return decodeURIComponent(text.replace(/\+/g, " "));
    } catch (error) {
      return text;
    }
  };
  class URLSearchParams {
    constructor(init = "") {
      this._list = [];
      this._url = null;
      if (init instanceof URLSearchParams) this._list = init._list.map(([k, v]) => [k, v]);
      else if (typeof init === "string") this._parse(init);
      else if (init && typeof init[Symbol.iterator] === "function")
        for (const pair of init) this._list.push([String(pair[0]), String(pair[1])]);
      else if (init && typeof init === "object")
        for (const key of Object.keys(init)) this._list.push([key, String(init[key])]);
    }
    _parse(text) {
      this._list = [];
      const query = String(text).replace(/^\?/, "");
      for (const part of query.split("&")) {
        if (!part) continue;
        const at = part.indexOf("=");
        this._list.push(at < 0 ? [formDecode(part), ""] : [formDecode(part.slice(0, at)), formDecode(part.slice(at + 1))]);
      }
    }
    _changed() {
      if (this._url) {
        const query = this.toString();
        this._url._search = query ? "?" + query : "";
      }
    }
    append(key, value) {
      this._list.push([String(key), String(value)]);
      this._changed();
    }
    delete(key) {
      this._list = this._list.filter(([k]) => k !== String(key));
      this._changed();
    }
    get(key) {
      const found = this._list.find(([k]) => k === String(key));
      return found ? found[1] : null;
    }
    getAll(key) {
      return this._list.filter(([k]) => k === String(key)).map(([, v]) => v);
    }
    has(key) {
      return this._list.some(([k]) => k === String(key));
    }
    set(key, value) {
      const name = String(key);
      const at = this._list.findIndex(([k]) => k === name);
      if (at < 0) this._list.push([name, String(value)]);
      else {
        this._list[at] = [name, String(value)];
        this._list = this._list.filter(([k], i) => i <= at || k !== name);
      }
      this._changed();
    }
    sort() {
      this._list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      this._changed();
    }
    forEach(callback, thisArg) {
      for (const [k, v] of this._list) callback.call(thisArg, v, k, this);
    }
    get size() {
      return this._list.length;
    }
    keys() {
      return this._list.map(([k]) => k)[Symbol.iterator]();
    }
    values() {
      return this._list.map(([, v]) => v)[Symbol.iterator]();
    }
    entries() {
      return this._list.map(([k, v]) => [k, v])[Symbol.iterator]();
    }
    [Symbol.iterator]() {
      return this.entries();
    }
    toString() {
      return this._list.map(([k, v]) => formEncode(k) + "=" + formEncode(v)).join("&");
    }
  }

  const SPECIAL = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21" };
  const URL_PATTERN =
    /^([a-zA-Z][a-zA-Z0-9+.-]*:)(?:\/\/(?:([^:@/?#]*)(?::([^@/?#]*))?@)?(\[[^\]]*\]|[^:/?#]*)(?::([^/?#]*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/;
  const escapeChars = (text, extra) =>
    text.replace(extra, (c) => {
      try {
        return encodeURIComponent(c);
      } catch (error) {
        return "%EF%BF%BD";
      }
    });
  const escapePath = (text) => escapeChars(text, /[^\x21-\x7e]|["<>`{}]/gu);
  const escapeQuery = (text) => escapeChars(text, /[^\x21-\x7e]|["<>`{}']/gu);
  function removeDots(path) {
    const out = [];
    const segments = path.split("/");
    segments.forEach((segment, i) => {
      if (segment === "..") {
        if (out.length > 1) out.pop();
        if (i === segments.length - 1) out.push("");
      } else if (segment === ".") {
        if (i === segments.length - 1) out.push("");
      } else out.push(segment);
    });
    const joined = out.join("/");
    return joined.startsWith("/") ? joined : "/" + joined;
  }
  function resolveAgainst(base, ref) {
    if (ref.startsWith("//")) return base.protocol + ref;
    const authority = base.protocol + "//" + (base.username ? base.username + (base.password ? ":" + base.password : "") + "@" : "") + base.host;
    if (ref === "") return base.href.replace(/#.*$/, "");
    if (ref.startsWith("#")) return base.href.replace(/#.*$/, "") + ref;
    if (ref.startsWith("?")) return authority + base.pathname + ref;
    if (ref.startsWith("/")) return authority + ref;
    const dir = base.pathname.replace(/[^/]*$/, "");
    return authority + dir + ref;
  }
  class URL {
    constructor(input, base) {
      let text = String(input instanceof URL ? input.href : input).trim();
      let match = URL_PATTERN.exec(text);
      if (!match && base !== undefined) {
        const parent = base instanceof URL ? base : new URL(base);
        text = resolveAgainst(parent, text);
        match = URL_PATTERN.exec(text);
      }
      if (!match) throw new TypeError(`Invalid URL: '${String(input)}'`);
      const [, protocol, username, password, hostname, port, path, search, hash] = match;
      this._protocol = protocol.toLowerCase();
      const special = this._protocol in SPECIAL;
      const host = (hostname || "").toLowerCase();
      if (special && !host) throw new TypeError(`Invalid URL: '${String(input)}' has no host`);
      if (/[^\x00-\x7f]/.test(host))
        throw new TypeError(`Invalid URL: host '${host}' is not ASCII; write international names in their xn-- form`);
      if (/[\s<>^|%]/.test(host)) throw new TypeError(`Invalid URL: host '${host}' has forbidden characters`);
      if (port !== undefined && port !== "" && (!/^\d+$/.test(port) || Number(port) > 65535))
        throw new TypeError(`Invalid URL: port '${port}' is not a number from 0 to 65535`);
      this._username = username || "";
      this._password = password || "";
      this._hostname = host;
      this._port = port && port !== SPECIAL[this._protocol] ? String(Number(port)) : "";
      this._hasAuthority = hostname !== undefined;
      this._pathname = special || this._hasAuthority ? removeDots(escapePath(path || "/")) : escapePath(path || "");
      this._search = search && search !== "?" ? escapeQuery(search) : "";
      this._hash = hash && hash !== "#" ? escapePath(hash) : "";
      this._params = new URLSearchParams(this._search);
      this._params._url = this;
    }
    get protocol() { return this._protocol; }
    get username() { return this._username; }
    get password() { return this._password; }
    get hostname() { return this._hostname; }
    set hostname(value) { this._hostname = String(value).toLowerCase(); }
    get port() { return this._port; }
    set port(value) { const p = String(value); this._port = p && p !== SPECIAL[this._protocol] ? String(Number(p)) : ""; }
    get host() { return this._hostname + (this._port ? ":" + this._port : ""); }
    get origin() { return this._protocol in SPECIAL ? this._protocol + "//" + this.host : "null"; }
    get pathname() { return this._pathname; }
    set pathname(value) { this._pathname = removeDots(escapePath(String(value).startsWith("/") ? String(value) : "/" + value)); }
    get search() { return this._search; }
    set search(value) {
      const text = String(value);
      this._search = text && text !== "?" ? escapeQuery(text.startsWith("?") ? text : "?" + text) : "";
      this._params._parse(this._search);
    }
    get searchParams() { return this._params; }
    get hash() { return this._hash; }
    set hash(value) { const text = String(value); this._hash = text && text !== "#" ? (text.startsWith("#") ? text : "#" + text) : ""; }
    get href() {
      const credentials = this._username ? this._username + (this._password ? ":" + this._password : "") + "@" : "";
      const authority = this._hasAuthority || this._protocol in SPECIAL ? "//" + credentials + this.host : "";
      return this._protocol + authority + this._pathname + this._search + this._hash;
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }

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

  async function call(op, payload) {
    const reply = JSON.parse(await host(op, JSON.stringify(payload)));
    if (reply.error !== undefined) throw new TypeError(reply.error);
    return reply;
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

  // crypto: randomUUID and getRandomValues from a pool the host filled from the OS, digests and HMAC from the host.
  // The pool is decoded as it is drawn from, so a call that needs no randomness pays nothing for it.
  const poolSize = randomHex.length / 2;
  let drawn = 0;
  function draw(count) {
    if (drawn + count > poolSize)
      throw new Error(`crypto: at most ${poolSize} random bytes per call (${poolSize / 16} UUIDs)`);
    const out = new Uint8Array(count);
    for (let i = 0; i < count; i++) out[i] = parseInt(randomHex.substr((drawn + i) * 2, 2), 16);
    drawn += count;
    return out;
  }
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const HASHES = ["SHA-1", "SHA-256", "SHA-384", "SHA-512"];
  const hashName = (algorithm) => {
    const name = String(typeof algorithm === "object" ? algorithm.name : algorithm).toUpperCase();
    if (!HASHES.includes(name)) throw new TypeError(`crypto: unsupported hash '${name}'; use one of ${HASHES.join(", ")}`);
    return name;
  };
  const subtle = Object.freeze({
    async digest(algorithm, data) {
      const reply = await call("digest", { hash: hashName(algorithm), data: bytesToBase64(toBytes(data)) });
      return base64ToBytes(reply.value).buffer;
    },
    async importKey(format, keyData, algorithm, extractable, usages) {
      if (format !== "raw" || !algorithm || String(algorithm.name).toUpperCase() !== "HMAC")
        throw new TypeError("crypto.subtle.importKey supports format 'raw' with { name: 'HMAC', hash } only");
      return Object.freeze({
        type: "secret",
        algorithm: { name: "HMAC", hash: { name: hashName(algorithm.hash || "SHA-256") } },
        extractable: Boolean(extractable),
        usages: usages || ["sign"],
        _raw: bytesToBase64(toBytes(keyData)),
      });
    },
    async sign(algorithm, key, data) {
      if (!key || !key._raw) throw new TypeError("crypto.subtle.sign needs a key from crypto.subtle.importKey");
      const reply = await call("hmac", { hash: key.algorithm.hash.name, key: key._raw, data: bytesToBase64(toBytes(data)) });
      return base64ToBytes(reply.value).buffer;
    },
  });
  const crypto = Object.freeze({
    subtle,
    randomUUID() {
      const b = draw(16);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const h = hex(b);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    },
    getRandomValues(array) {
      if (!ArrayBuffer.isView(array)) throw new TypeError("crypto.getRandomValues takes a typed array");
      new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(draw(array.byteLength));
      return array;
    },
    async sha256Hex(data) {
      return hex(new Uint8Array(await subtle.digest("SHA-256", data)));
    },
    async hmacSha256Hex(key, data) {
      const imported = await subtle.importKey("raw", toBytes(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return hex(new Uint8Array(await subtle.sign("HMAC", imported, data)));
    },
  });

  return {
    __proto__: null, TextEncoder, TextDecoder, atob, btoa, URL, URLSearchParams, Headers, Response, fetch, crypto,
  };
})
