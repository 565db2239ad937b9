package broker

// TODO(stub)
func (b *Broker) armRetention() {}
