package run

import "os"

// StoreLastCall stores name on the last-call page a worker was given (file descriptor 4), as a
// worker's announcer does before each device call.
func StoreLastCall(name string) error {
	m, err := mapLastCall(os.NewFile(4, "last-call"))
	if err != nil {
		return err
	}
	m.store(name)
	return nil
}

// SupervisedStatus is supervisedStatus, for the specs of a supervisor's reading of its child.
var SupervisedStatus = supervisedStatus
