//go:build sluice_mutant_replica

package sim

import "github.com/sluicemq/sluice/core/replica"

const mutantReplicaBuild = true

func setReplicaMutant(name string) { replica.Mutant = name }
