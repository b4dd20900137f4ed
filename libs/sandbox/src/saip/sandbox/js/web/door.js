// The web helpers' one way out: a request through the host door (the runtime's `host`: an op and its JSON payload)
// whose JSON reply is the promise's value, or its TypeError when the reply names an error.
(function (host) {
  "use strict";

  async function call(op, payload) {
    const reply = JSON.parse(await host(op, JSON.stringify(payload)));
    if (reply.error !== undefined) throw new TypeError(reply.error);
    return reply;
  }

  return call;
})
