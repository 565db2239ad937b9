// Package testport hands tests loopback ports that outgoing connections cannot take.
//
// Tests that kill a node and restart it on the same address must find that port free
// again. A port from the kernel's ephemeral range (listen on :0) can be taken in the
// meantime as the local port of any outgoing connection on the machine — with three
// test suites running side by side, a restarted node once failed with "bind: address
// already in use". Ports below that range are only ever taken by an explicit bind, so
// this package picks them there, at random, and checks each is free when handed out.
package testport
