/* Codelet names; see codelet_name.h. */
#include "core/codelet_name.h"

#include <dlfcn.h>

namespace fusing {

namespace {

std::string cpu_function_symbol(const struct starpu_codelet *cl)
{
	Dl_info info;
	if (cl->cpu_funcs[0] && dladdr(reinterpret_cast<void *>(cl->cpu_funcs[0]), &info) && info.dli_sname &&
	    info.dli_saddr == reinterpret_cast<void *>(cl->cpu_funcs[0]))
		return info.dli_sname;
	return "";
}

} // namespace

std::string codelet_family_name(const struct starpu_codelet *cl)
{
	if (!cl)
		return "(no codelet)";
	if (cl->name && cl->name[0])
		return cl->name;
	if (cl->model && cl->model->symbol && cl->model->symbol[0])
		return cl->model->symbol;
	std::string symbol = cpu_function_symbol(cl);
	return symbol.empty() ? "unnamed" : symbol;
}

std::vector<std::string> codelet_known_names(const struct starpu_codelet *cl)
{
	std::vector<std::string> names;
	if (cl->name && cl->name[0])
		names.push_back(cl->name);
	if (cl->model && cl->model->symbol && cl->model->symbol[0])
		names.push_back(cl->model->symbol);
	std::string symbol = cpu_function_symbol(cl);
	if (!symbol.empty())
		names.push_back(symbol);
	return names;
}

const std::string &CodeletNames::of(const struct starpu_codelet *cl)
{
	std::lock_guard<std::mutex> lock(mutex_);
	auto it = names_.find(cl);
	if (it == names_.end())
		it = names_.emplace(cl, codelet_family_name(cl)).first;
	return it->second;
}

std::vector<std::string> CodeletNames::all() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	std::vector<std::string> names;
	for (const auto &entry : names_)
		names.push_back(entry.second);
	return names;
}

} // namespace fusing
