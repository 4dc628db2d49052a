// `wirewise report LOG... -o report.html`: what wirewise did to a job, as one self-contained HTML page.
// Per communicator: the tables in force over the collectives (size on one axis, the decision as a colour)
// with the policy's alarms, commits, link faults and exploration marked on them and explained in a table;
// the bus bandwidth of the busiest size buckets over time; the control plane's waits. For the job: link
// health over time and the net plugin's rail shifts. Inline SVG and CSS only: no script, no fonts, no
// network, so it opens from a file, a mail attachment or an air-gapped cluster the same way.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tools/log_summary.h"

namespace wirewise::tools {

struct ReportOptions {
  std::vector<std::string> files;  // the logs read, named in the page's header
};

// The page, whole. Everything taken from the log is escaped; the page has no element that loads anything.
std::string reportHtml(const LogSummary& s, const ReportOptions& o);

}  // namespace wirewise::tools
