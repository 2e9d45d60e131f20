/* Codelet names; see codelet_name.h. */
#include "fusion/codelet_name.h"

#include <dlfcn.h>

namespace fusing {

std::string codelet_family_name(const struct starpu_codelet *cl)
{
	if (!cl)
		return "(no codelet)";
	if (cl->name && cl->name[0])
		return cl->name;
	if (cl->model && cl->model->symbol && cl->model->symbol[0])
		return cl->model->symbol;
	Dl_info info;
	if (cl->cpu_funcs[0] && dladdr(reinterpret_cast<void *>(cl->cpu_funcs[0]), &info) && info.dli_sname &&
	    info.dli_saddr == reinterpret_cast<void *>(cl->cpu_funcs[0]))
		return info.dli_sname;
	return "unnamed";
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
