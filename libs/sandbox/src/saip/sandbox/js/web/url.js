// URLSearchParams and URL (WHATWG-shaped; host names must be ASCII, the xn-- form for international ones). A URL's
// searchParams is bound to it: changing one changes the other.
(function () {
  "use strict";

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

  return { URLSearchParams, URL };
})
