"""
The standard library's top-level module names, fixed here rather than read from the worker's interpreter.

``sys.stdlib_module_names`` differs between Python versions (3.12 and 3.13 removed modules, 3.14 added some), so
reading it would make the facts, and the graph hash, depend on the Python a worker runs. This is the union of
CPython 3.8 to 3.14's names, the stub-only ``_typeshed``, PyPy's built-in ``__pypy__``, and Python 2's names that
code still imports in ``try``/``except ImportError`` fallbacks: none of them is a distribution to depend on.
"""

STDLIB = frozenset({
    "BaseHTTPServer", "CGIHTTPServer", "ConfigParser", "Cookie", "HTMLParser", "Queue", "SimpleHTTPServer",
    "SimpleXMLRPCServer", "SocketServer", "StringIO", "Tkinter", "UserDict", "UserList", "UserString",
    "__builtin__", "__future__", "__main__", "__pypy__",
    # Python 2's, besides those among the names below.
    "Bastion", "Dialog", "DocXMLRPCServer", "FileDialog", "MimeWriter", "ScrolledText", "Tix", "Tkconstants", "Tkdnd",
    "_abcoll", "_sha", "_winreg", "dl", "fpformat", "hotshot", "mhlib", "mimify", "multifile", "posixfile", "rexec",
    "statvfs", "tkColorChooser", "tkCommonDialog", "tkFileDialog", "tkFont", "tkSimpleDialog", "ttk", "xmllib",
    "_abc", "_aix_support", "_ast", "_asyncio", "_bisect", "_blake2",
    "_bootlocale", "_bootsubprocess", "_bz2", "_codecs", "_codecs_cn", "_codecs_hk", "_codecs_iso2022",
    "_codecs_jp", "_codecs_kr", "_codecs_tw", "_collections", "_collections_abc", "_colorize", "_compat_pickle",
    "_compression", "_contextvars", "_crypt", "_csv", "_ctypes", "_curses", "_curses_panel", "_datetime", "_dbm",
    "_decimal", "_dummy_thread", "_elementtree", "_frozen_importlib", "_frozen_importlib_external",
    "_functools", "_gdbm",
    "_hashlib", "_heapq", "_imp", "_interpchannels", "_interpqueues", "_interpreters", "_io", "_json", "_locale",
    "_lsprof", "_lzma", "_markupbase", "_md5", "_msi", "_multibytecodec", "_multiprocessing", "_opcode",
    "_operator", "_osx_support", "_overlapped", "_pickle", "_posixshmem", "_posixsubprocess", "_py_abc",
    "_pydecimal", "_pyio", "_pyrepl", "_queue", "_random", "_scproxy", "_sha1", "_sha256", "_sha3", "_sha512",
    "_signal", "_sitebuiltins", "_socket", "_sqlite3", "_sre", "_ssl", "_stat", "_statistics", "_string",
    "_strptime", "_struct", "_suggestions", "_symtable", "_sysconfig", "_thread", "_threading_local", "_tkinter",
    "_tokenize", "_tracemalloc", "_typeshed", "_typing", "_uuid", "_warnings", "_weakref", "_weakrefset", "_winapi",
    "_zoneinfo", "abc", "aifc", "annotationlib", "antigravity", "anydbm", "argparse", "array", "ast", "asynchat",
    "asyncio", "asyncore", "atexit", "audioop", "base64", "bdb", "binascii", "binhex", "bisect", "builtins", "bz2",
    "cPickle", "cProfile", "cStringIO", "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd", "code", "codecs",
    "codeop", "collections", "colorsys", "commands", "compileall", "compression", "concurrent", "configparser",
    "contextlib", "contextvars", "cookielib", "copy", "copy_reg", "copyreg", "crypt", "csv", "ctypes", "curses",
    "dataclasses", "datetime", "dbhash", "dbm", "decimal", "difflib", "dircache", "dis", "distutils", "doctest",
    "dumbdbm", "dummy_thread", "dummy_threading", "email", "encodings", "ensurepip", "enum", "errno",
    "exceptions", "faulthandler",
    "fcntl", "filecmp", "fileinput", "fnmatch", "formatter", "fractions", "ftplib", "functools", "future_builtins",
    "gc", "gdbm", "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib", "grp", "gzip", "hashlib",
    "heapq", "hmac", "html", "htmlentitydefs", "htmllib", "http", "httplib", "idlelib", "imaplib", "imghdr", "imp",
    "importlib", "imputil", "inspect", "io", "ipaddress", "itertools", "json", "keyword", "lib2to3", "linecache",
    "locale", "logging", "lzma", "macpath", "mailbox", "mailcap", "markupbase", "marshal", "math", "md5",
    "mimetools", "mimetypes", "mmap", "modulefinder", "msilib", "msvcrt", "multiprocessing", "mutex", "netrc",
    "new", "nis", "nntplib", "nt", "ntpath", "nturl2path", "numbers", "opcode", "operator", "optparse", "os",
    "ossaudiodev", "parser", "pathlib", "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib",
    "popen2", "poplib", "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd", "py_compile", "pyclbr",
    "pydoc", "pydoc_data", "pyexpat", "queue", "quopri", "random", "re", "readline", "repr", "reprlib", "resource",
    "rfc822", "rlcompleter", "robotparser", "runpy", "sched", "secrets", "select", "selectors", "sets", "sgmllib",
    "sha", "shelve", "shlex", "shutil", "signal", "site", "smtpd", "smtplib", "sndhdr", "socket", "socketserver",
    "spwd", "sqlite3", "sre_compile", "sre_constants", "sre_parse", "ssl", "stat", "statistics", "string",
    "stringprep", "struct", "subprocess", "sunau", "symbol", "symtable", "sys", "sysconfig", "syslog", "tabnanny",
    "tarfile", "telnetlib", "tempfile", "termios", "textwrap", "this", "thread", "threading", "time", "timeit",
    "tkMessageBox", "tkinter", "token", "tokenize", "tomllib", "trace", "traceback", "tracemalloc", "tty", "turtle",
    "turtledemo", "types", "typing", "unicodedata", "unittest", "urllib", "urllib2", "urlparse", "uu", "uuid",
    "venv", "warnings", "wave", "weakref", "webbrowser", "whichdb", "winreg", "winsound", "wsgiref", "xdrlib",
    "xml", "xmlrpc", "xmlrpclib", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo"
})
