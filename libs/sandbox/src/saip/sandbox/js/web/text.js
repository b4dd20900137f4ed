// UTF-8 (TextEncoder, TextDecoder) and base64 (atob, btoa), with the byte helpers the other web helpers share: a
// string, an ArrayBuffer or a typed array as bytes, and bytes to and from base64 (the host door's form for bytes).
(function () {
  "use strict";

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

  return { TextEncoder, TextDecoder, atob, btoa, encoder, decoder, toBytes, bytesToBase64, base64ToBytes };
})
