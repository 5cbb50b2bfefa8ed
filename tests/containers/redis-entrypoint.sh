#!/bin/sh
# As the official redis image: inside a compose network, protected mode (on whenever no password
# is set) would refuse every client but loopback.
if [ "$1" = redis-server ]; then
  set -- "$@" --protected-mode no
fi
exec "$@"
