// Preloaded (node --require) into the reference servers the tests start over HTTP: a
// server that listens on a port without naming a host listens on 127.0.0.1 only.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    if (typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  } else if (args[0] && typeof args[0] === 'object' && !args[0].host && !args[0].path) {
    args[0] = Object.assign({}, args[0], { host: '127.0.0.1' });
  }
  return listen.apply(this, args);
};
