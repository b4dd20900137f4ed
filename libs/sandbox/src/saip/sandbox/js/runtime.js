// The runtime every tool call starts from, in a fresh QuickJS context: console capture, timers, the host door, and the
// one call the context serves (__saipRun, __saipReport); the web helpers (UTF-8, base64, URL, URLSearchParams, Headers,
// fetch, crypto) are js/web/, read as one script when the code first names one of them. QuickJS alone offers no host
// access (no process, no files, no require, no import); the only door out is the host function `door`, which takes a
// string and nothing else, and the worker decides what a request through it may do. The script's value is the setup
// function, given the door and `load` (which evaluates the web helpers' script once and returns its value with the
// call's pool of random bytes); it returns the entry, the one function the worker calls afterwards. The context is made
// for its call and discarded after it, so nothing here is ever reset or shared between calls.
(function (door, load) {
  "use strict";
  const g = globalThis;

  // What the call's own functions need, taken before the code can replace any of it.
  const { parse, stringify } = JSON;
  const { apply } = Reflect;
  const { entries } = Object;
  const { then } = Promise.prototype;
  const { split } = String.prototype;
  const { toString: errorText } = Error.prototype;
  const NativePromise = Promise;
  const { withResolvers } = Promise;
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  const { add: addTimer, delete: dropTimer } = Set.prototype;
  const { max } = Math;
  const toNumber = Number;

  // The host door: a request goes out as the JSON text [id, op, payload], and the worker answers it by calling the
  // entry with "answer", the id and the reply, which resolves the promise made here, from the Promise taken above,
  // so a code that replaces the global Promise still gets its answers. Every answer resolves it; a refusal or a
  // fault reads {"error": ...}. The resolvers wait in an object without a prototype, out of the code's reach.
  const waiting = Object.create(null);
  let lastRequest = 0;
  const host = (op, payload) => {
    const { promise, resolve } = apply(withResolvers, NativePromise, []);
    const id = ++lastRequest;
    waiting[id] = resolve;
    door(stringify([id, op, payload]));
    return promise;
  };
  const answer = (id, reply) => {
    const resolve = waiting[id];
    if (resolve === undefined) return;
    delete waiting[id];
    resolve(reply);
  };

  // console: captured, capped at the call's consoleCap entries of 2000 characters each.
  const logs = [];
  let dropped = 0;
  let consoleCap = 0;
  const show = (value) => {
    if (typeof value === "string") return value;
    if (value instanceof Error) return `${value.name}: ${value.message}`;
    try {
      const text = JSON.stringify(value);
      return text === undefined ? String(value) : text;
    } catch (error) {
      return String(value);
    }
  };
  const log = (...args) => {
    if (logs.length >= consoleCap) {
      dropped += 1;
      return;
    }
    let line = args.map(show).join(" ");
    if (line.length > 2000) line = line.slice(0, 2000) + "…";
    logs.push(line);
  };
  g.console = Object.freeze({ log, info: log, warn: log, error: log, debug: log });

  // The web helpers (js/web/) are read and made the first time the code names one of them, each global an accessor
  // that cannot be redefined: a call that uses none of them pays for neither. What they call back into, the host
  // door, was taken above, before the code ran.
  const web = () => {
    const loaded = load();
    return loaded[0](host, loaded[1]);
  };
  let made = null;
  for (const name of ["TextEncoder", "TextDecoder", "atob", "btoa", "URL", "URLSearchParams", "Headers", "Response",
    "fetch", "crypto"]) {
    Object.defineProperty(g, name, { get: () => (made ??= web())[name], enumerable: false, configurable: false });
  }

  // The call. __saipRun binds the globals, compiles the code as the body of an async function (so a syntax error
  // is reported as such and the code cannot break out of its wrapper) and starts it; __saipReport says how it
  // stands. The worker calls both through the entry, after which the context's pending jobs have run, so a code
  // that waits on nothing but promises has settled by the time the report is read.
  let state = "idle";
  let value = "";
  let failure = "";
  const firstLine = (text) => apply(split, String(text), ["\n"])[0];
  // An Error reads as its first line (name and message), a thrown string as itself, any other value as its JSON:
  // what the code threw, not "[object Object]".
  const reason = (thrown) => {
    try {
      if (thrown !== null && typeof thrown === "object" && typeof thrown.stack === "string") {
        return firstLine(apply(errorText, thrown, []));
      }
      if (typeof thrown === "string") return firstLine(thrown);
      const text = stringify(thrown);
      if (text === undefined) return `The code threw ${String(thrown)}; throw new Error(message) to say what failed.`;
      return `The code threw ${text}`;
    } catch (error) {
      return "The code threw a value that cannot be shown as JSON; throw new Error(message) to say what failed.";
    }
  };
  const settle = (next, text) => {
    if (state !== "running") return;
    state = next;
    if (next === "done") value = text;
    else failure = text;
  };
  // Why a value is not JSON, in the words of the runtime's documentation (the engine's own are terser).
  const notJson = (error) => {
    const text = String(error && error.message);
    if (/BigInt/.test(text)) return "Do not know how to serialize a BigInt";
    if (/circular/i.test(text)) return "Converting circular structure to JSON";
    return reason(text);
  };
  const finish = (result) => {
    if (result === undefined) return settle("failed", "Error: The code returned undefined: end it with `return <value>`.");
    let text;
    try {
      text = stringify(result);
    } catch (error) {
      return settle("failed", `Error: The return value is not JSON (${notJson(error)}); return plain data.`);
    }
    if (text === undefined) {
      return settle("failed", `Error: The return value (a ${typeof result}) is not JSON; return plain data.`);
    }
    settle("done", text);
  };
  // Timers: a wait of the host's (the worker's event loop), never a microtask, so a loop of timers cannot hold the
  // context; a throw in a callback fails the call as a throw in its body does, and a delay under 1 ms waits 1 ms.
  const timers = new Set();
  const setTimeout = (callback, delay, ...args) => {
    if (typeof callback !== "function") throw new TypeError("setTimeout takes a function; a string of code is not run");
    const elapsed = host("timer", max(1, toNumber(delay) || 0));
    const id = lastRequest;
    apply(addTimer, timers, [id]);
    apply(then, elapsed, [() => {
      if (!apply(dropTimer, timers, [id])) return;
      try {
        apply(callback, undefined, args);
      } catch (thrown) {
        settle("failed", reason(thrown));
      }
    }]);
    return id;
  };
  const clearTimeout = (id) => {
    apply(dropTimer, timers, [id]);
  };

  for (const [name, value] of Object.entries({ setTimeout, clearTimeout })) {
    Object.defineProperty(g, name, { value, writable: false, enumerable: false, configurable: false });
  }
  const run = (bindings, code, cap) => {
    if (state !== "idle") throw new Error("An isolate serves one call; this one has run already.");
    state = "running";
    consoleCap = toNumber(cap);
    for (const [name, bound] of entries(parse(bindings))) g[name] = bound;
    let body;
    try {
      body = new AsyncFunction(code);
    } catch (error) {
      return settle("failed", `Error: The code does not parse: ${error.name}: ${error.message}`);
    }
    apply(then, body(), [finish, (thrown) => settle("failed", reason(thrown))]);
  };
  const report = () => stringify({ state, value, error: failure, logs, dropped });
  Object.defineProperty(g, "__saipRun", { value: run });
  Object.defineProperty(g, "__saipReport", { value: report });

  // The entry: what the worker calls, with strings only.
  return (op, first, second, third) => {
    if (op === "run") run(first, second, third);
    else if (op === "answer") answer(toNumber(first), second);
    else return report();
    return "";
  };
})
