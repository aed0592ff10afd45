// Preloaded (`node --require`) into the everything server, whose HTTP transports listen on every
// interface (express `app.listen(PORT)`): a listen without a host gets 127.0.0.1.
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if (typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (port && typeof port === "object" && port.port !== undefined && !port.host) {
    args[0] = { ...port, host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
