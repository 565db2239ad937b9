package meta

import (
	"fmt"

	"github.com/sluicemq/sluice/core/acl"
)

// applyACLs applies an ACLsCreated or ACLsDeleted record. Every binding must be
// storable (acl.Binding.Check), else the record changes nothing. Adding a binding
// already there, or removing one that is not, is not an error: two DeleteAcls racing
// may both name a binding, and the second changes nothing.
func (im *Image) applyACLs(r Record) error {
	if len(r.ACLs) == 0 {
		return fmt.Errorf("%v record without bindings", r.Kind)
	}
	for _, b := range r.ACLs {
		if err := b.Check(); err != nil {
			return fmt.Errorf("ACL %v: %w", b, err)
		}
	}
	for _, b := range r.ACLs {
		if r.Kind == KindACLsCreated {
			im.acls.Add(b)
		} else {
			im.acls.Remove(b)
		}
	}
	im.aclVersion++
	return nil
}

// ACLs returns the image's ACL bindings. The set is the image's own: read it, never
// change it.
func (im *Image) ACLs() *acl.Set { return im.acls }

// ACLVersion changes whenever an ACL record applies.
func (im *Image) ACLVersion() uint64 { return im.aclVersion }
