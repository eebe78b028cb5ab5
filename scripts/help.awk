# `make help`: the targets that have a `## description`, grouped under the `##@ Group`
# line above them (a group may be continued further down or in another file), the groups
# in a newcomer's order: run, test, the API and its clients, Kubernetes, operations.
# Colours only on a terminal (make passes color=1). A target outside any group is listed
# under "Other", which scripts/help_test.sh refuses.
BEGIN { FS = ":.*## "; width = 22; n = split("Run,Test,API and clients,Kubernetes,Operations", order, ",") }
FNR == 1 { group = "" }
/^##@ / { group = substr($0, 5); next }
/^[a-zA-Z0-9_-]+:.*## / {
	g = group == "" ? "Other" : group
	if (!(g in lines) && g !~ /^(Run|Test|API and clients|Kubernetes|Operations)$/) order[++n] = g
	name = sprintf("%-" width "s", $1)
	if (color) name = "\033[36m" name "\033[0m"
	lines[g] = lines[g] "  " name " " $2 "\n"
}
END {
	printf "Usage: make <target>   (README.md: make run, make test)\n"
	for (i = 1; i <= n; i++) if (order[i] in lines) printf "\n%s\n%s", order[i], lines[order[i]]
}
