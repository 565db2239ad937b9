package main

// `sluice cluster unregister --id N`: Kafka's `kafka-cluster unregister`. Any broker
// takes the UnregisterBroker request and forwards it to the active controller, which
// refuses a voter, a live broker and one still hosting replicas, each with its reason
// (docs/operations.md, "Replace a dead machine").

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func clusterUnregister(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("sluice cluster unregister", "sluice cluster unregister --id N", stderr)
	cf.register(fs)
	id := fs.Int("id", -1, "node id of the dead broker to remove")
	if _, err := parseCommand(fs, args); err != nil {
		return err
	}
	if err := checkClient(fs, cf); err != nil {
		return err
	}
	if *id < 0 || *id > 1<<31-1 {
		return usageErr(fs, "--id N is required (the dead broker's node id)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout*2)
	defer cancel()
	cl, err := connect(ctx, cf)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = int32(*id)
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return friendly(err, "", "")
		}
		kerrv := kerr.ErrorForCode(resp.ErrorCode)
		if kerrv == nil {
			fmt.Fprintf(stdout, "broker %d unregistered\n", *id)
			return nil
		}
		// No quorum leader known yet, or it moved: ask again until the timeout.
		if errors.Is(kerrv, kerr.NotController) && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return fmt.Errorf("broker %d: %w%s", *id, kerrv, msg)
	}
}
