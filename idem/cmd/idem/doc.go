// Command idem looks at and repairs an idemkit processed-ids table and the
// dead-letter queues of its consumers.
package main
