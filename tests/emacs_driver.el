;;; emacs_driver.el --- driven by tests/test_emacs_e2e.py  -*- lexical-binding: t; -*-
;; Emacs runs in a terminal (a pty) with the shipped editors/emacs/mlir-lsp.el loaded by the
;; user's init file; the test types the keys (M-x eglot-code-actions, RET, C-x C-s). This file
;; only reports what the user would see, as key=value lines in $EMACS_RESULT, and quits at the end.

(require 'cl-lib)

(defvar mlir-test--phase 'open)
(defvar mlir-test--buffer nil)
(defvar mlir-test--timer nil)

(defun mlir-test--log (key value)
  (write-region (format "%s=%s\n" key value) nil (getenv "EMACS_RESULT") 'append 'silent))

(defun mlir-test--mla001 ()
  "The MLA001 Flymake diagnostics of the fixture's buffer, first line first."
  (with-current-buffer mlir-test--buffer
    (sort (cl-remove-if-not
           (lambda (d) (equal (plist-get (alist-get 'eglot-lsp-diag (flymake-diagnostic-data d)) :code)
                              "MLA001"))
           (flymake-diagnostics))
          (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b))))))

(defun mlir-test--types (diags)
  (mapconcat (lambda (d) (symbol-name (flymake-diagnostic-type d))) diags ","))

(defun mlir-test--step ()
  (condition-case err
      (progn
        (unless mlir-test--buffer
          (setq mlir-test--buffer (get-file-buffer (getenv "EMACS_FIXTURE"))))
        (when mlir-test--buffer
          (pcase mlir-test--phase
            ('open
             (let ((diags (mlir-test--mla001)))
               (when (>= (length diags) 4)
                 (mlir-test--log "major_mode" (buffer-local-value 'major-mode mlir-test--buffer))
                 (mlir-test--log "server" (with-current-buffer mlir-test--buffer
                                            (jsonrpc-name (eglot-current-server))))
                 (mlir-test--log "diagnostics_on_open" (length diags))
                 (mlir-test--log "types_on_open" (mlir-test--types diags))
                 (mlir-test--log "message" (flymake-diagnostic-text (car diags)))
                 ;; the cursor on the first finding, as after `M-x flymake-goto-next-error'
                 (with-selected-window (get-buffer-window mlir-test--buffer)
                   (goto-char (flymake-diagnostic-beg (car diags))))
                 (setq mlir-test--phase 'code-action)
                 (mlir-test--log "ready" 1))))
            ('code-action
             (when (with-current-buffer mlir-test--buffer
                     (save-excursion
                       (goto-char (point-min))
                       (search-forward "%assumed_5 = util.assume.int" nil t)))
               (mlir-test--log "applied" "true")
               (setq mlir-test--phase 'save)))
            ('after-save
             (let ((diags (mlir-test--mla001)))
               (when (= (length diags) 2)
                 (mlir-test--log "diagnostics_after_fix" (length diags))
                 (mlir-test--log "types_after_fix" (mlir-test--types diags))
                 (setq mlir-test--phase 'done)
                 (cancel-timer mlir-test--timer)
                 ;; stop the server before quitting, as a user's M-x eglot-shutdown
                 (with-current-buffer mlir-test--buffer
                   (eglot-shutdown (eglot-current-server)))
                 (mlir-test--log "stopped" (if (with-current-buffer mlir-test--buffer
                                                 (eglot-current-server))
                                               "false" "true"))
                 (kill-emacs 0)))))))
    (error (mlir-test--log "error" (error-message-string err)))))

(add-hook 'minibuffer-setup-hook
          (lambda () (mlir-test--log "prompt" (minibuffer-prompt))))
(add-hook 'after-save-hook
          (lambda () (when (eq (current-buffer) mlir-test--buffer)
                       (mlir-test--log "saved" 1)
                       (setq mlir-test--phase 'after-save))))
(setq mlir-test--timer (run-with-timer 0.2 0.1 #'mlir-test--step))
