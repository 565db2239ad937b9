package replica_test

import "errors"

var errSyncFailed = errors.New("EIO")
