package broker

import "github.com/twmb/franz-go/pkg/kmsg"

type produceState struct{}

// TODO(stub)
func (b *Broker) handleProduce(r Request, m *kmsg.ProduceRequest) { b.reply(r, m.ResponseKind()) }

func (b *Broker) syncDone(in SyncDone) {}
