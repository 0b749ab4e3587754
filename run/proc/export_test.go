package proc

// SupervisedStatus is supervisedStatus, for the specs of a supervisor's reading of its child.
var SupervisedStatus = supervisedStatus
