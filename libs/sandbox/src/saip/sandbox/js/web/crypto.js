// crypto: randomUUID and getRandomValues from a pool the host filled from the OS, digests and HMAC from the host.
// The pool is decoded as it is drawn from, so a call that needs no randomness pays nothing for it.
(function (call, text, randomHex) {
  "use strict";
  const { toBytes, bytesToBase64, base64ToBytes } = text;

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

  return crypto;
})
