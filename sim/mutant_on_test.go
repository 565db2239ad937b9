//go:build sluice_mutant_group_coordinator

package sim

import "github.com/sluicemq/sluice/core/group"

const mutantGroupBuild = true

func setGroupMutant(name string) { group.Mutant = name }
