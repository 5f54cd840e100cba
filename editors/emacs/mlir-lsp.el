;;; mlir-lsp.el --- mlir-lsp (cf.assert findings for IREE) through eglot  -*- lexical-binding: t; -*-

;; Emacs 29+ (eglot built in), or Emacs 28 with eglot from GNU ELPA (Debian: elpa-eglot).
;;
;; Use: in your init file
;;   (setq mlir-lsp-command '("/path/to/mlir-lsp/.venv/bin/mlir-lsp"))   ; if not on PATH
;;   (setq mlir-lsp-settings '(:fixMode "assume" :ignore ["MLA003"]))    ; optional
;;   (load "/path/to/mlir-lsp/editors/emacs/mlir-lsp.el")
;;
;; It gives `.mlir' files a major mode (LLVM's `mlir-mode' from mlir/utils/emacs when that is
;; loaded first, else a small one defined here), registers the server for that mode in
;; `eglot-server-programs', and starts eglot when such a file is opened (`mlir-lsp-auto-start').
;; Findings show up as Flymake diagnostics; quick fixes with M-x eglot-code-actions (the
;; `util.assume.int' rewrite is the default where it is offered).
;;
;; Settings are a plist in the server's `mlirLsp' section (JSON arrays as vectors), sent as
;; initializationOptions.  Per project, `eglot-workspace-configuration' in .dir-locals.el works
;; too: ((nil . ((eglot-workspace-configuration . (:mlirLsp (:fixMode "assume"))))))

;;; Code:

(defgroup mlir-lsp nil
  "The mlir-lsp language server (cf.assert findings for IREE) through eglot."
  :group 'tools
  :prefix "mlir-lsp-")

(defcustom mlir-lsp-command '("mlir-lsp")
  "The server command and its arguments (the server runs on stdio)."
  :type '(repeat string))

(defcustom mlir-lsp-settings nil
  "The server's settings (section `mlirLsp') as a plist, e.g. (:fixMode \"assume\").
Keys: :select, :ignore (vectors of rule codes), :severity (:MLA003 \"warning\"),
:fixMode (\"strip\" or \"assume\"), :parserDiagnostics, :dispatch, :workspace;
`mlir-lsp --show-settings' prints them all with their defaults."
  :type 'plist)

(defcustom mlir-lsp-auto-start t
  "Whether opening an MLIR file starts eglot (`eglot-ensure')."
  :type 'boolean)

;; A major mode for .mlir, unless one (e.g. LLVM's mlir-mode.el) is already there.
(unless (fboundp 'mlir-mode)
  (defvar mlir-mode-syntax-table
    (let ((table (make-syntax-table)))
      (modify-syntax-entry ?/ ". 12" table)
      (modify-syntax-entry ?\n ">" table)
      (modify-syntax-entry ?\" "\"" table)
      (dolist (c '(?_ ?. ?$))
        (modify-syntax-entry c "_" table))
      table)
    "Syntax table of `mlir-mode': // comments, \"strings\".")

  (defvar mlir-mode-font-lock-keywords
    `((,(rx "%" (+ (any alnum "_$.-"))) . font-lock-variable-name-face)
      (,(rx "@" (or (+ (any alnum "_$.-")) (seq "\"" (* (not (any "\""))) "\""))) . font-lock-function-name-face)
      (,(rx "^" (+ (any alnum "_$.-"))) . font-lock-constant-face)
      (,(rx "!" (+ (any alnum "_$."))) . font-lock-type-face)
      (,(rx "#" (+ (any alnum "_$."))) . font-lock-preprocessor-face)
      (,(rx symbol-start (or "tensor" "memref" "vector" "index" "none" "complex"
                             (seq (any "isuf") (+ digit)) "bf16")
            symbol-end)
       . font-lock-type-face)
      (,(rx symbol-start (+ (any lower "_")) (+ "." (+ (any alnum "_"))) symbol-end)
       . font-lock-keyword-face))
    "Highlighting of `mlir-mode': SSA values, symbols, blocks, types, op names.")

  (define-derived-mode mlir-mode prog-mode "MLIR"
    "Major mode for MLIR's textual form (defined by mlir-lsp.el)."
    (setq-local comment-start "// ")
    (setq-local comment-start-skip "//+[ \t]*")
    (setq-local font-lock-defaults '(mlir-mode-font-lock-keywords))))

(add-to-list 'auto-mode-alist '("\\.mlir\\'" . mlir-mode))

(defun mlir-lsp-eglot-contact (&optional _interactive)
  "The eglot contact: `mlir-lsp-command', with `mlir-lsp-settings' as init options."
  (append mlir-lsp-command
          (list :initializationOptions (list :mlirLsp (or mlir-lsp-settings #s(hash-table))))))

(defvar eglot-server-programs)
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs '(mlir-mode . mlir-lsp-eglot-contact)))

(declare-function eglot-ensure "eglot")
(defun mlir-lsp-maybe-start ()
  "Start eglot in this buffer when `mlir-lsp-auto-start' is set."
  (when (and mlir-lsp-auto-start (require 'eglot nil t))
    (eglot-ensure)))

(add-hook 'mlir-mode-hook #'mlir-lsp-maybe-start)

(provide 'mlir-lsp)
;;; mlir-lsp.el ends here
