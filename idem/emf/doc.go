// Package emf writes the kit's outcomes as CloudWatch metrics: one
// Embedded Metric Format line per delivery, on stdout in Lambda, from which
// CloudWatch Logs extracts a count per outcome with the message's Source as
// the dimension (namespace "Idem" in the reference template's alarms).
//
//	metrics, err := emf.New(os.Stdout)
//	store, err := idem.New(client, "processed-ids", func(o *idem.Options) {
//		o.Observers = []idem.Observer{metrics}
//	})
//
// It is a package of its own so that the core knows no metrics format:
// idem reports each outcome to its Observers, and this is one of them.
//
// The metric's name is the outcome (Processed, Duplicate, Rejected,
// KeyReuse, Failed, Refused, InFlight, Fenced, Contended, TableNotFound),
// its value 1, so an alarm sums it per Source: the reference template
// alarms on each source's duplicate rate and on any Failed, KeyReuse or
// TableNotFound. A TableNotFound line also carries the missing table (or
// the candidates, comma-separated) and the Region as the properties Table
// and Region, which CloudWatch Logs Insights can filter on. A tenant's delivery
// (idem.Message.Tenant, Lambda's tenant isolation mode) is counted per
// Source and also per Source and Tenant, so an alarm may watch either.
//
// The lines carry no "level", which Lambda's JSON log format reads as
// INFO: keep the function's ApplicationLogLevel at INFO or below, or
// Lambda drops them (and the alarms built on them go quiet). The
// reference template pins it to INFO, and its test refuses anything above.
//
// The format: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
package emf
