#include "datasync/tree_walk.h"

#include <sys/stat.h>

namespace cutover {

const char* SpecialFileKind(uint32_t format) {
  switch (format) {
    case S_IFSOCK:
      return "socket";
    case S_IFIFO:
      return "fifo";
    case S_IFCHR:
      return "character device";
    case S_IFBLK:
      return "block device";
    default:
      return "special file";
  }
}

Status TreeWalk::Run(const std::function<Status(EntrySpool::Record)>& emit) {
  return Walk("", emit);
}

Status TreeWalk::Walk(const std::string& rel,
                      const std::function<Status(EntrySpool::Record)>& emit) {
  const std::string dir = rel.empty() ? root_ : root_ + "/" + rel;
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir));
  for (const std::string& n : names) {
    std::string path = rel.empty() ? n : rel + "/" + n;
    const std::string full = root_ + "/" + path;
    Result<FileInfo> got = fs_.Stat(full, /*follow_links=*/false);
    if (!got.ok()) {
      if (got.status().code() == Code::kNotFound) continue;  // removed meanwhile: not in it
      return got.status();
    }
    const FileInfo& st = *got;
    Entry e;
    e.path = path;
    e.mode = st.mode;
    e.mtime_ns = st.mtime_ns;
    const bool mine = !options_.shard.has_value() || InShard(path, *options_.shard);
    if (st.type == FileType::kDirectory && options_.skip_dir.has_value() &&
        st.device == options_.skip_dir->first && st.inode == options_.skip_dir->second) {
      // A file:// store inside the tree would be pushed into its own snapshot: left out.
      if (mine) counts_.skipped.push_back(path + " (the store itself)");
      continue;
    }
    switch (st.type) {
      case FileType::kDirectory:
        e.type = EntryType::kDir;
        tree_.Add(path, e.type);
        if (mine) {
          CUTOVER_RETURN_IF_ERROR(emit(EntrySpool::Record{std::move(e), {}, 0, {}}));
          ++counts_.dirs;
        }
        CUTOVER_RETURN_IF_ERROR(Walk(path, emit));  // another shard's directory may hold ours
        break;
      case FileType::kSymlink: {
        e.type = EntryType::kSymlink;
        tree_.Add(path, e.type);
        if (!mine) break;
        CUTOVER_ASSIGN_OR_RETURN(e.target, fs_.ReadLink(full));
        CUTOVER_RETURN_IF_ERROR(emit(EntrySpool::Record{std::move(e), {}, 0, {}}));
        ++counts_.symlinks;
        break;
      }
      case FileType::kRegular: {
        e.type = EntryType::kFile;
        tree_.Add(path, e.type);
        if (!mine) break;
        // Fewer bytes stored than the size: holes (or compression, which does no harm: pull
        // only leaves blocks of zeros unwritten).
        e.sparse = st.size >= 4096 && st.allocated < st.size;
        if (st.links > 1) {  // the first path of an inode is its file, the others links to it
          auto [it, first] = inodes_.try_emplace({st.device, st.inode}, path);
          if (!first) e.link = it->second;
        }
        const FileStatKey key{st.device, st.inode, st.size, st.mtime_ns, st.ctime_ns};
        counts_.file_bytes += st.size;
        CUTOVER_RETURN_IF_ERROR(emit(EntrySpool::Record{std::move(e), key, 0, {}}));
        ++counts_.files;
        break;
      }
      case FileType::kOther:
        if (mine) counts_.skipped.push_back(path + " (" + SpecialFileKind(st.format) + ")");
        break;
    }
  }
  return Status::Ok();
}

}  // namespace cutover
